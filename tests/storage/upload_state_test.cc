// The upload state file: what it keeps, how it is protected, and that two
// uploads to one destination never share one.
#include "spool/core/storage/upload_state.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "spool/core/env.h"
#include "tests/support/temp_dir.h"

namespace spool {
namespace {

UploadRecord Record() {
  return UploadRecord{"s3://bucket/model.bin", "/data/model.bin", 200u << 20, 1732400000123456789, 0xdeadbeef,
                      "s3-multipart/1 8388608 2~abc"};
}

TEST(UploadStateFile, KeepsTheRecordPrivatelyUntilRemoved) {
  test_support::TempDir dir("spool-upload-state");
  const auto folder = dir.path() / "uploads";
  auto state = UploadStateFile::Open("s3://bucket/model.bin", folder);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_TRUE(state->locked());
  EXPECT_FALSE(state->Load().has_value());
  ASSERT_TRUE(state->Save(Record()).ok());
  struct stat info {};
  ASSERT_EQ(::stat(folder.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(state->path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  auto loaded = state->Load();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(loaded->SameSource(Record()));
  EXPECT_EQ(loaded->token, Record().token);
  UploadRecord touched = Record();
  touched.mtime_ns += 1;
  EXPECT_FALSE(loaded->SameSource(touched));
  state->Remove();
  EXPECT_FALSE(state->Load().has_value());
}

TEST(UploadStateFile, ASecondUploadToTheSameObjectGetsNoLock) {
  test_support::TempDir dir("spool-upload-state");
  auto first = UploadStateFile::Open("gs://bucket/a", dir.path());
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->locked());
  auto second = UploadStateFile::Open("gs://bucket/a", dir.path());
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->locked());
  EXPECT_FALSE(second->Save(Record()).ok());
  auto other = UploadStateFile::Open("gs://bucket/b", dir.path());
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->locked());
}

TEST(UploadStateFile, RefusesNewlinesAndIgnoresDamagedFiles) {
  test_support::TempDir dir("spool-upload-state");
  auto state = UploadStateFile::Open("s3://bucket/x", dir.path());
  ASSERT_TRUE(state.ok());
  UploadRecord bad = Record();
  bad.token = "a\nb";
  EXPECT_EQ(state->Save(bad).code(), StatusCode::kInvalidArgument);
  FILE* file = std::fopen(state->path().c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("something else\n", file);
  std::fclose(file);
  EXPECT_FALSE(state->Load().has_value());
}

TEST(UploadStateFolder, FollowsTheCacheConvention) {
  {
    ScopedEnvOverride cache(Env::Fixed({{"XDG_CACHE_HOME", "/tmp/cache-here"}, {"HOME", "/home/someone"}}));
    EXPECT_EQ(UploadStateFolder(), "/tmp/cache-here/spool/uploads");
  }
  ScopedEnvOverride home(Env::Fixed({{"HOME", "/home/someone"}}));
  EXPECT_EQ(UploadStateFolder(), "/home/someone/.cache/spool/uploads");
}

}  // namespace
}  // namespace spool
