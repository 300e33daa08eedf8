// The throttle's pacing blocks (core/pacing_block.h): private ones, and the
// host's, which are files in a folder of the test's own.
#include "spool/core/pacing_block.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/temp_dir.h"

namespace spool {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<PacingBlock> OnHost(const test_support::TempDir& dir, const std::string& key,
                                    std::string* why_not = nullptr) {
  std::string ignored;
  return PacingBlock::OnHost(key, dir.path().string(), why_not ? why_not : &ignored);
}

// The one file a key's block lives in.
fs::path OnlyFile(const test_support::TempDir& dir) {
  fs::path found;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    found = entry.path();
    ++files;
  }
  EXPECT_EQ(files, 1);
  return found;
}

TEST(PacingBlockTest, BlocksOfOneKeyShareTheirStateAndOthersDoNot) {
  test_support::TempDir dir;
  auto first = OnHost(dir, "s3://b at http://127.0.0.1:1");
  auto second = OnHost(dir, "s3://b at http://127.0.0.1:1");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_TRUE(first->on_host());
  { PacingBlock::Guard(*first).state().rate = 42; }
  EXPECT_EQ(PacingBlock::Guard(*second).state().rate, 42);
  // A file private to this user, and no temporary left beside it.
  const fs::path file = OnlyFile(dir);
  EXPECT_EQ(fs::status(file).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_NE(file.filename().string().find("spool-pacing-v1-"), std::string::npos);

  auto other = OnHost(dir, "s3://b at http://127.0.0.1:2");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(PacingBlock::Guard(*other).state().rate, 0);
  other.reset();

  // The file goes with its last user, not before.
  first.reset();
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(PacingBlock::Guard(*second).state().rate, 42);
  second.reset();
  EXPECT_TRUE(fs::is_empty(dir.path()));
  auto again = OnHost(dir, "s3://b at http://127.0.0.1:1");
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(PacingBlock::Guard(*again).state().rate, 0);
}

TEST(PacingBlockTest, AForkedChildLeavesTheFileToItsOpener) {
  test_support::TempDir dir;
  auto block = OnHost(dir, "s3://b at http://127.0.0.1:1");
  ASSERT_NE(block, nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    { PacingBlock::Guard(*block).state().rate = 5; }
    block.reset();
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(PacingBlock::Guard(*block).state().rate, 5);
  EXPECT_FALSE(fs::is_empty(dir.path()));
  block.reset();
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// A forked child shares its parent's open file, and with it the parent's
// lock: the parent letting go must leave the file to the child, and a later
// user must find the same state.
TEST(PacingBlockTest, AParentLettingGoLeavesTheFileToItsForkedChild) {
  test_support::TempDir dir;
  const std::string key = "s3://b at http://127.0.0.1:1";
  auto block = OnHost(dir, key);
  ASSERT_NE(block, nullptr);
  const fs::path file = OnlyFile(dir);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    { PacingBlock::Guard(*block).state().rate = 7; }
    char byte;
    _exit(read(go[0], &byte, 1) == 1 ? 0 : 1);  // holds the block until told
  }
  block.reset();
  EXPECT_TRUE(fs::exists(file)) << "removed while the child still uses it";
  auto later = OnHost(dir, key);
  ASSERT_NE(later, nullptr);
  for (int i = 0; i < 1000 && PacingBlock::Guard(*later).state().rate != 7; ++i) usleep(1000);
  EXPECT_EQ(PacingBlock::Guard(*later).state().rate, 7);
  ASSERT_EQ(write(go[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(fs::exists(file)) << "removed while `later` still uses it";
  later.reset();
  EXPECT_FALSE(fs::exists(file));
  close(go[0]);
  close(go[1]);
}

// Whatever else sits at the name (a folder, a FIFO, a link) is not used,
// and opening does not block on it.
TEST(PacingBlockTest, SomethingElseAtTheNameIsNotUsed) {
  test_support::TempDir dir;
  const std::string key = "s3://b at http://127.0.0.1:1";
  const std::string path = PacingBlock::PathFor(key, dir.path().string());
  std::string why_not;
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(OnHost(dir, key, &why_not), nullptr);
  EXPECT_NE(why_not.find(path), std::string::npos) << why_not;
  fs::remove(path);
  fs::create_directory(path);
  EXPECT_EQ(OnHost(dir, key), nullptr);
  fs::remove(path);
  fs::create_symlink(dir.path() / "elsewhere", path);
  EXPECT_EQ(OnHost(dir, key), nullptr);
  EXPECT_FALSE(fs::exists(dir.path() / "elsewhere"));
}

// A process killed while it used a file cannot remove it; the next new
// file of this user removes it, and leaves a file still in use.
TEST(PacingBlockTest, FilesOfKilledProcessesGoWhenTheNextFileIsMade) {
  test_support::TempDir dir;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string why_not;
    auto left = PacingBlock::OnHost("s3://killed at http://127.0.0.1:1", dir.path().string(), &why_not);
    _exit(left ? 0 : 1);  // no destructor runs: as if killed
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const fs::path abandoned = OnlyFile(dir);
  auto used = OnHost(dir, "s3://used at http://127.0.0.1:1");
  ASSERT_NE(used, nullptr);
  EXPECT_FALSE(fs::exists(abandoned));
  auto another = OnHost(dir, "s3://another at http://127.0.0.1:1");
  ASSERT_NE(another, nullptr);
  EXPECT_EQ(PacingBlock::Guard(*used).state().rate, 0);
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 2) << "a file in use was swept";
}

TEST(PacingBlockTest, AFileOthersCanWriteOrOfAnotherSizeIsNotUsed) {
  test_support::TempDir dir;
  const std::string key = "s3://b at http://127.0.0.1:1";
  auto kept = OnHost(dir, key);  // the file goes with its last user
  ASSERT_NE(kept, nullptr);
  const fs::path file = OnlyFile(dir);
  std::string why_not;
  fs::permissions(file, fs::perms::group_write | fs::perms::others_write, fs::perm_options::add);
  EXPECT_EQ(OnHost(dir, key, &why_not), nullptr);
  EXPECT_NE(why_not.find(file.string()), std::string::npos) << why_not;
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  EXPECT_NE(OnHost(dir, key), nullptr);
  fs::resize_file(file, 100);
  EXPECT_EQ(OnHost(dir, key, &why_not), nullptr);
}

TEST(PacingBlockTest, NoFolderOrAKeyTooLongGivesNoBlockAndSaysWhy) {
  std::string why_not;
  EXPECT_EQ(PacingBlock::OnHost("s3://b", "/nonexistent-spool-folder", &why_not), nullptr);
  EXPECT_NE(why_not.find("/nonexistent-spool-folder"), std::string::npos) << why_not;
  test_support::TempDir dir;
  EXPECT_EQ(OnHost(dir, std::string(4096, 'k'), &why_not), nullptr);
  EXPECT_NE(why_not.find("too long"), std::string::npos) << why_not;
}

TEST(PacingBlockTest, PrivateBlocksAreTheirOwn) {
  auto first = PacingBlock::Private();
  auto second = PacingBlock::Private();
  EXPECT_FALSE(first->on_host());
  { PacingBlock::Guard(*first).state().rate = 7; }
  EXPECT_EQ(PacingBlock::Guard(*second).state().rate, 0);
}

}  // namespace
}  // namespace spool
