// Checkpoint restore of crafted manifests: whatever paths a manifest names
// (.., absolute, backslashes, NUL bytes, empty segments, the manifest's own
// name) and whatever symlinks the target folder holds, restore never writes
// outside the folder it was given. Unit test on the local store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/crc32c.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool {
using checkpoint::CheckpointManager;
using checkpoint::CheckpointManifest;
using checkpoint::ExistingFolder;

namespace {

namespace fs = std::filesystem;

class RestorePathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(top_.empty());
    // top/store/ckpt holds the checkpoints; top/a/b/target is restored into,
    // so "../.." from a file in it lands in top/a, still inside top.
    fs::create_directories(top_ / "store" / "ckpt" / "step-000000000001");
    fs::create_directories(top_ / "a" / "b");
    target_ = top_ / "a" / "b" / "target";
  }

  // Writes step 1's manifest naming one file `path` with `content`, and the
  // file itself where a naive implementation would look for it.
  void WriteCheckpoint(const std::string& path_json, const std::string& content) {
    const fs::path step = top_ / "store" / "ckpt" / "step-000000000001";
    std::ofstream(step / "MANIFEST.json")
        << R"({"format_version": 1, "step": "1", "wall_time": "2026-11-22T01:00:00Z", "files": [{"path": )"
        << path_json << R"(, "size": ")" << content.size() << R"(", "crc32c": )" << crc32c::Value(content) << "}]}";
    test_support::WriteFile(step / "payload.bin", content);
  }

  Result<CheckpointManifest> Restore() {
    auto manager = CheckpointManager::Open("file://" + (top_ / "store" / "ckpt").string());
    EXPECT_TRUE(manager.ok()) << manager.status().ToString();
    if (!manager.ok()) return manager.status();
    // Replacing asked for: the target holds what the tests plant there.
    return (*manager)->Restore(1, target_, ExistingFolder::kReplace);
  }

  // Every path under top/ that is not in the store or the target.
  std::set<std::string> StrayFiles() {
    std::set<std::string> stray;
    for (const auto& entry : fs::recursive_directory_iterator(top_)) {
      const fs::path relative = fs::relative(entry.path(), top_);
      const std::string first = *relative.begin();
      if (first == "store") continue;
      if (relative == fs::path("a") || relative == fs::path("a/b")) continue;
      if (entry.path().string().rfind(target_.string(), 0) == 0) continue;
      stray.insert(relative.string());
    }
    return stray;
  }

  const test_support::TempDir scratch_{"spool-security"};
  const fs::path top_ = scratch_.path();
  fs::path target_;
};

TEST_F(RestorePathsTest, UnsafeManifestPathsAreRefusedAndNothingIsWritten) {
  const std::vector<std::string> evil = {
      R"("../escape.bin")",          R"("../../escape.bin")",       R"("../../../../../../tmp/escape.bin")",
      R"("/tmp/absolute.bin")",      R"("a/../../escape.bin")",      R"("a\\..\\..\\escape.bin")",
      R"("\\\\server\\share\\x")",   R"("C:\\escape.bin")",          R"("nul\u0000byte.bin")",
      R"("./x.bin")",                R"("a//b.bin")",                R"("")",
      R"("MANIFEST.json")",          R"("a/b/")",                    R"("..")",
  };
  for (const std::string& path : evil) {
    SCOPED_TRACE(path);
    WriteCheckpoint(path, "evil bytes");
    auto restored = Restore();
    ASSERT_FALSE(restored.ok()) << "restored a manifest naming " << path;
    EXPECT_NE(restored.status().code(), StatusCode::kOk);
    EXPECT_FALSE(restored.status().message().empty());
    EXPECT_FALSE(fs::exists(target_)) << "a refused restore created the target folder";
    EXPECT_EQ(StrayFiles(), std::set<std::string>{}) << "a refused restore wrote outside the target";
  }
}

TEST_F(RestorePathsTest, SymlinksInTheTargetAreNotFollowed) {
  // The target already exists and holds a symlink where the checkpoint has a
  // folder: restore must not write through it into `outside`.
  fs::create_directories(top_ / "outside");
  fs::create_directories(target_);
  fs::create_directory_symlink(top_ / "outside", target_ / "model");
  fs::create_symlink(top_ / "outside" / "file-link", target_ / "weights.bin");
  const fs::path step = top_ / "store" / "ckpt" / "step-000000000001";
  fs::create_directories(step / "model");
  const std::string weights = "weights", nested = "nested";
  test_support::WriteFile(step / "model" / "nested.bin", nested);
  test_support::WriteFile(step / "weights.bin", weights);
  std::ofstream(step / "MANIFEST.json")
      << R"({"format_version": 1, "step": "1", "files": [)"
      << R"({"path": "model/nested.bin", "size": ")" << nested.size() << R"(", "crc32c": )" << crc32c::Value(nested)
      << R"(}, {"path": "weights.bin", "size": ")" << weights.size() << R"(", "crc32c": )" << crc32c::Value(weights)
      << "}]}";

  auto restored = Restore();
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_TRUE(fs::is_empty(top_ / "outside")) << "restore wrote through a symlink in the target";
  EXPECT_FALSE(fs::is_symlink(target_ / "model"));
  EXPECT_FALSE(fs::is_symlink(target_ / "weights.bin"));
  EXPECT_EQ(test_support::ReadFile(target_ / "model" / "nested.bin"), nested);
}

}  // namespace
}  // namespace spool
