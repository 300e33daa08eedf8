// A 200 MiB resumable upload: a connection dropped mid-chunk is recovered
// by asking the session what it has; then the upload is suspended, its
// session saved to a file, and another process (gcs_resume_helper) continues
// and commits it. The result is checked byte for byte and by CRC32C.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "spool/core/crc32c.h"
#include "tests/gcs/test_server.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::gcs {
namespace {

using testing::ArmFault;
using testing::FillPattern;
using testing::OpenStore;
using testing::Server;
using testing::UniqueName;

constexpr uint64_t kTotal = 200ull << 20;
constexpr uint64_t kFirstProcess = 100ull << 20 | 12345;  // not a chunk boundary
constexpr uint64_t kChunk = 8ull << 20;

int RunHelper(const std::vector<std::string>& args) {
  const char* helper = std::getenv("SPOOL_GCS_RESUME_HELPER");
  EXPECT_NE(helper, nullptr) << "run through ctest: SPOOL_GCS_RESUME_HELPER names the helper binary";
  if (helper == nullptr) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(helper)};
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(helper, argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

uint32_t PatternCrc(uint64_t size) {
  std::string block;
  uint32_t crc = 0;
  for (uint64_t offset = 0; offset < size; offset += block.size()) {
    block.resize(static_cast<size_t>(std::min<uint64_t>(8 << 20, size - offset)));
    FillPattern(offset, block);
    crc = crc32c::Extend(crc, block.data(), block.size());
  }
  return crc;
}

TEST(GcsResumable, DroppedChunkRecoveredThenResumedByAnotherProcess) {
  GcsStoreOptions options;
  options.chunk_size = kChunk;
  const std::string bucket = UniqueName("resumable");
  auto store = OpenStore(bucket, options);
  ASSERT_NE(store, nullptr);
  const std::string key = "models/big.bin";

  auto writer = store->OpenResumableWrite(key);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_FALSE((*writer)->session_uri().empty());
  // The first chunk's connection is reset after 3 MiB and a bit of its body,
  // twice: libcurl itself resends once on a fresh connection when a reused
  // one dies, so only the second reset reaches the resumable recovery.
  const std::string session_match = "/b/" + bucket + "/o?uploadType=resumable";
  ArmFault(R"({"kind":"reset_after","bytes":3158067,"count":2,"method":"PUT","match":")" + session_match + R"("})");
  std::string block(4 << 20, '\0');
  uint64_t offset = 0;
  while (offset < kFirstProcess) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), kFirstProcess - offset));
    FillPattern(offset, std::span<char>(block.data(), n));
    ASSERT_TRUE((*writer)->Append(std::string_view(block.data(), n)).ok());
    offset += n;
  }
  auto state = (*writer)->Suspend();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->committed % (256 << 10), 0u);
  EXPECT_EQ(state->committed, kFirstProcess / (256 << 10) * (256 << 10));
  writer->reset();  // a suspended writer leaves its session alone

  const test_support::TempDir scratch("spool-resume");
  const std::string state_file = (scratch / "writer.state").string();
  test_support::WriteFile(state_file, state->Serialize());
  // The other process also loses a connection mid-chunk.
  ArmFault(R"({"kind":"reset_after","bytes":5000000,"count":2,"method":"PUT","match":")" + session_match + R"("})");
  EXPECT_EQ(RunHelper({Server().endpoint(), bucket, key, state_file, std::to_string(kTotal)}), 0);

  auto info = store->Stat(key);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, kTotal);
  ASSERT_TRUE(info->crc32c.has_value());
  EXPECT_EQ(*info->crc32c, PatternCrc(kTotal));

  // Read it all back (parallel ranged reads, CRC32C checked) and compare.
  auto reader = store->OpenRead(key);
  ASSERT_TRUE(reader.ok());
  std::string data(kTotal, '\0');
  auto read = (*reader)->ReadAt(0, data);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(*read, kTotal);
  std::string expected(kTotal, '\0');
  FillPattern(0, expected);
  EXPECT_TRUE(data == expected);
  EXPECT_TRUE(store->Delete(key).ok());
}

TEST(GcsResumable, ASavedStateThatDisagreesWithTheSessionIsRefused) {
  auto store = OpenStore(UniqueName("resumable"));
  ASSERT_NE(store, nullptr);
  auto writer = store->OpenResumableWrite("k");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append(testing::Pattern(0, 600 << 10)).ok());
  auto state = (*writer)->Suspend();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->committed, 512u << 10);
  ResumableUploadState wrong = *state;
  wrong.committed += 256 << 10;
  auto resumed = store->ResumeWrite("k", wrong);
  ASSERT_FALSE(resumed.ok());
  EXPECT_EQ(resumed.status().code(), StatusCode::kFailedPrecondition);
  auto parsed = ResumableUploadState::Parse(state->Serialize());
  ASSERT_TRUE(parsed.ok());
  auto good = store->ResumeWrite("k", *parsed);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ((*good)->bytes_appended(), 512u << 10);
  ASSERT_TRUE((*good)->Append(testing::Pattern(512 << 10, 100)).ok());
  auto info = (*good)->Close();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, (512u << 10) + 100);
  EXPECT_EQ(*ReadAll(*store, "k"), testing::Pattern(0, (512 << 10) + 100));
}

TEST(GcsResumable, AnAbortedUploadCancelsItsSessionForGood) {
  auto store = OpenStore(UniqueName("resumable"));
  ASSERT_NE(store, nullptr);
  auto writer = store->OpenResumableWrite("cancelled");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append(testing::Pattern(0, 300 << 10)).ok());
  const std::string session = (*writer)->session_uri();
  (*writer)->Abort();  // DELETE on the session: the service answers 499
  auto status = store->client().QueryUpload(session);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), StatusCode::kFailedPrecondition);  // 410 Gone from now on
  EXPECT_EQ(status.status().remote().http_status, 410);
  auto resumed = store->ResumeWrite("cancelled", ResumableUploadState{session, 0, 0});
  ASSERT_FALSE(resumed.ok());
  EXPECT_EQ(store->Stat("cancelled").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace spool::gcs
