// The checkpoint manager on a real S3 server: the Ceph RGW of the ceph_rgw
// fixture (tests/s3), in a bucket of this test's own, opened by URL after
// RegisterAllBackends(). RGW 16 ignores If-None-Match, so these runs also
// exercise the Stat-then-PUT commit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/crc32c.h"
#include "spool/register_backends.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/checkpoint/crash_harness.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::DeterministicBytes;
using test_support::TempDir;

constexpr const char* kBucket = "spool-checkpoint-test";

// Creates or deletes the test's bucket with curl, as the fixture does; the
// keys stay in the environment, never on a command line or in a message.
int Bucket(const char* method) {
  std::string command = std::string("curl -s -o /dev/null -w '%{http_code}' --max-time 60 -X ") + method +
                        " --aws-sigv4 aws:amz:us-east-1:s3 --user \"$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY\" "
                        "-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \"$AWS_ENDPOINT_URL/" +
                        kBucket + "\" > bucket_status.txt";
  if (std::system(command.c_str()) != 0) return -1;
  std::ifstream in("bucket_status.txt");
  int code = 0;
  in >> code;
  std::remove("bucket_status.txt");
  return code;
}

class CheckpointS3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RegisterAllBackends();
    int code = Bucket("PUT");
    ASSERT_TRUE(code == 200 || code == 409) << "creating bucket " << kBucket << " answered HTTP " << code;
  }
  static void TearDownTestSuite() { Bucket("DELETE"); }

  std::string Root(std::string_view name) { return std::string("s3://") + kBucket + "/" + std::string(name); }

  // Deletes everything under the root (the OSD is small).
  void Erase(const std::string& root) {
    auto location = OpenLocation(root);
    ASSERT_TRUE(location.ok()) << location.status().ToString();
    ListOptions options;
    options.prefix = location->key + "/";
    auto listed = ListAll(*location->store, options);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    std::vector<std::string> keys;
    for (const auto& object : listed->objects) keys.push_back(object.key);
    if (keys.empty()) return;
    auto failures = location->store->DeleteMany(keys);
    ASSERT_TRUE(failures.ok() && failures->empty());
  }

  TempDir scratch_{"spool-ckpt-test"};
};

// CRC32C and size of a local file, streamed.
std::pair<uint64_t, uint32_t> Fingerprint(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 20);
  uint64_t size = 0;
  uint32_t crc = 0;
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    crc = crc32c::Extend(crc, buffer.data(), static_cast<size_t>(in.gcount()));
    size += static_cast<uint64_t>(in.gcount());
  }
  return {size, crc};
}

TEST_F(CheckpointS3Test, SavesAndRestoresTwentyFilesUpTo300MiB) {
  const uint64_t MiB = 1 << 20;
  const uint64_t sizes[20] = {0,        1,           100,          4096,     65536,    MiB,      2 * MiB,
                              5 * MiB,  5 * MiB + 1, 8 * MiB,      16 * MiB - 1, 16 * MiB, 16 * MiB + 1, 33 * MiB,
                              64 * MiB, 100 * MiB,   128 * MiB + 7, 200 * MiB, 17,       300 * MiB};
  fs::path source = scratch_.path() / "source";
  for (int i = 0; i < 20; ++i) {
    fs::path file = source / (i % 4 == 0 ? "shards" : "") / ("file-" + std::to_string(i));
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary);
    std::string bytes = DeterministicBytes(i, sizes[i]);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string root = Root("big");
  Erase(root);
  auto manager = CheckpointManager::Open(root);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  auto saved = (*manager)->Save(100, *CheckpointSource::FromFolder(source), {{"loader", "position=17"}});
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->files.size(), 20u);

  fs::path target = scratch_.path() / "restored";
  auto restored = (*manager)->RestoreLatest(target);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->metadata.at("loader"), "position=17");
  int compared = 0;
  for (const auto& entry : fs::recursive_directory_iterator(source)) {
    if (!entry.is_regular_file()) continue;
    fs::path relative = entry.path().lexically_relative(source);
    EXPECT_EQ(Fingerprint(target / relative), Fingerprint(entry.path())) << relative;
    ++compared;
  }
  EXPECT_EQ(compared, 20);
  EXPECT_TRUE((*manager)->Verify(100).ok());
  Erase(root);
}

TEST_F(CheckpointS3Test, RetentionAndLatestOnS3) {
  const std::string root = Root("retention");
  Erase(root);
  CheckpointOptions options;
  options.retention = {.keep_last = 2, .keep_every_n_steps = 3};
  auto manager = CheckpointManager::Open(root, options);
  ASSERT_TRUE(manager.ok());
  for (int64_t step = 1; step <= 7; ++step) {
    CheckpointSource source;
    source.AddBuffer("w.bin", DeterministicBytes(step, 10000)).AddBuffer("empty", "");
    ASSERT_TRUE((*manager)->Save(step, source).ok());
  }
  auto listed = (*manager)->List();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<int64_t> steps;
  for (const auto& manifest : *listed) steps.push_back(manifest.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 4, 6, 7}));
  EXPECT_EQ(*(*manager)->Latest(), std::optional<int64_t>(7));
  CheckpointSource again;
  again.AddBuffer("w.bin", "x");
  EXPECT_EQ((*manager)->Save(7, again).status().code(), StatusCode::kAlreadyExists);
  Erase(root);
}

TEST_F(CheckpointS3Test, CorruptedObjectIsDataLossAndTheTargetStaysUntouched) {
  const std::string root = Root("corrupt");
  Erase(root);
  auto manager = CheckpointManager::Open(root);
  ASSERT_TRUE(manager.ok());
  CheckpointSource source;
  source.AddBuffer("model/weights.bin", DeterministicBytes(1, 3 << 20));
  ASSERT_TRUE((*manager)->Save(1, source).ok());
  std::string tampered = DeterministicBytes(1, 3 << 20);
  tampered[12345] ^= 0x40;
  // Where the manifest says the file is (under the save's own folder).
  Result<CheckpointManifest> saved = (*manager)->ReadManifest(1);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  const std::string key = (*manager)->layout().FileKey(1, saved->files.at(0).object_path());
  ASSERT_TRUE(WriteAll((*manager)->store(), key, tampered).ok());

  fs::path target = scratch_.path() / "restored";
  testing::WriteFolder(target, {{"previous.txt", "keep me"}});
  // Even where replacing is asked for, a failed restore leaves the folder as it was.
  Status status = (*manager)->Restore(1, target, ExistingFolder::kReplace).status();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
  EXPECT_NE(status.message().find("'model/weights.bin'"), std::string::npos) << status.message();
  EXPECT_EQ(test_support::ReadTree(target), (std::map<std::string, std::string>{{"previous.txt", "keep me"}}));
  Erase(root);
}

TEST_F(CheckpointS3Test, LatestIsAlwaysACommittedStepWhenTheSaverIsKilled) {
  testing::CrashTestConfig config;
  config.root_url = Root("crash");
  Erase(config.root_url);
  config.saver = SPOOL_CRASH_SAVER;
  config.work_folder = scratch_.path() / "work";
  fs::create_directories(config.work_folder);
  config.runs = 30;
  config.max_kill_delay_ms = 1500;  // a step takes longer on S3 than on local files
  testing::RunCrashTest(config);
  Erase(config.root_url);
}

}  // namespace
}  // namespace spool::checkpoint
