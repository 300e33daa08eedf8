// The shared test helpers do what the tests that use them rely on.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "tests/support/bytes.h"
#include "tests/support/env.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::test_support {
namespace {

namespace fs = std::filesystem;

TEST(TempDirTest, IsFreshEmptyAndRemovedWithItsContent) {
  fs::path kept;
  {
    TempDir first("spool-support-test");
    TempDir second("spool-support-test");
    ASSERT_FALSE(first.path().empty());
    EXPECT_NE(first.path(), second.path());
    EXPECT_TRUE(fs::is_directory(first.path()));
    EXPECT_TRUE(fs::is_empty(first.path()));
    EXPECT_EQ(first.path().filename().string().rfind("spool-support-test-", 0), 0u) << first.path();
    WriteFile(first / "nested/deeper/file", "bytes");
    kept = first.path();
  }
  EXPECT_FALSE(fs::exists(kept));
}

TEST(TempDirTest, KeyIsTheAbsolutePathWithoutItsLeadingSlash) {
  TempDir dir;
  EXPECT_EQ("/" + dir.Key("a/b"), (dir.path() / "a/b").string());
}

TEST(BytesTest, SameForASeedDifferentAcrossSeedsAndPositions) {
  const std::string bytes = DeterministicBytes(7, 1003);  // not a multiple of the 8-byte word
  EXPECT_EQ(bytes.size(), 1003u);
  EXPECT_EQ(bytes, DeterministicBytes(7, 1003));
  EXPECT_NE(bytes, DeterministicBytes(8, 1003));
  EXPECT_EQ(DeterministicBytes(7, 10), bytes.substr(0, 10));  // a shorter run is a prefix
  EXPECT_NE(bytes.substr(0, 8), bytes.substr(8, 8));
  EXPECT_EQ(DeterministicBytes(7, 0), "");
}

TEST(FilesTest, WriteThenReadIsByteForByte) {
  TempDir dir;
  const std::string bytes("line\r\n\0binary\xff", 14);
  WriteFile(dir / "sub/file.bin", bytes);
  EXPECT_EQ(ReadFile(dir / "sub/file.bin"), bytes);
  WriteFile(dir / "sub/file.bin", "short");  // replaced, not appended
  EXPECT_EQ(ReadFile(dir / "sub/file.bin"), "short");
  EXPECT_EQ(ReadFile(dir / "missing"), "");
}

TEST(FilesTest, ReadTreeListsEveryFileByRelativePath) {
  TempDir dir;
  WriteFile(dir / "tree/a.txt", "alpha");
  WriteFile(dir / "tree/sub/b.txt", "beta");
  WriteFile(dir / "tree/empty", "");
  fs::create_directories(dir / "tree/empty-folder");
  EXPECT_EQ(ReadTree(dir / "tree"),
            (std::map<std::string, std::string>{{"a.txt", "alpha"}, {"empty", ""}, {"sub/b.txt", "beta"}}));
  EXPECT_TRUE(ReadTree(dir / "no-such-folder").empty());
}

// ctest sets SPOOL_SUPPORT_TEST_SET=set and SPOOL_SUPPORT_TEST_EMPTY= for
// this binary.
TEST(EnvTest, GetEnvFallsBackWhenUnsetOrEmpty) {
  EXPECT_EQ(GetEnv("SPOOL_SUPPORT_TEST_SET", "fallback"), "set");
  EXPECT_EQ(GetEnv("SPOOL_SUPPORT_TEST_EMPTY", "fallback"), "fallback");
  EXPECT_EQ(GetEnv("SPOOL_SUPPORT_TEST_UNSET"), "");
}

}  // namespace
}  // namespace spool::test_support
