#include "spool/checkpoint/manifest.h"

#include <gtest/gtest.h>

#include "spool/checkpoint/layout.h"

namespace spool::checkpoint {
namespace {

CheckpointManifest Sample() {
  CheckpointManifest manifest;
  manifest.step = 1234;
  manifest.wall_time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'763'769'600'123));
  manifest.files = {{"model/weights.bin", 4096, 0x12345678u}, {"empty", 0, 0}, {"a/b/c.txt", (1ull << 40), 0xffffffffu}};
  manifest.metadata = {{"loader_state", "{\"epoch\":3}"}, {"loss", "0.25"}};
  return manifest;
}

TEST(ManifestTest, RoundTripsThroughJson) {
  CheckpointManifest manifest = Sample();
  Result<std::string> json = EncodeManifest(manifest);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_NE(json->find("\"format_version\": 1"), std::string::npos) << *json;
  EXPECT_NE(json->find("\"wall_time\": \"2025-11-22T00:00:00.123Z\""), std::string::npos) << *json;
  EXPECT_NE(json->find("\"size\": \"0\""), std::string::npos) << "zero sizes are written out: " << *json;

  Result<CheckpointManifest> decoded = DecodeManifest(*json, "test");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->step, 1234);
  EXPECT_EQ(decoded->wall_time, manifest.wall_time);
  EXPECT_EQ(decoded->files, manifest.files);
  EXPECT_EQ(decoded->metadata, manifest.metadata);
  EXPECT_EQ(decoded->total_bytes(), 4096 + (1ull << 40));
}

TEST(ManifestTest, IgnoresUnknownFieldsAndRefusesNewerVersions) {
  Result<CheckpointManifest> decoded =
      DecodeManifest(R"({"format_version": 1, "step": "7", "future_field": [1, 2], "files": []})", "m");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->step, 7);

  Result<CheckpointManifest> newer = DecodeManifest(R"({"format_version": 3, "step": "7"})", "s3://b/m");
  EXPECT_EQ(newer.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(newer.status().message().find("s3://b/m"), std::string::npos);
}

TEST(ManifestTest, GarbageIsDataLoss) {
  EXPECT_EQ(DecodeManifest("not json", "m").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeManifest("{}", "m").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeManifest(R"({"format_version": 1, "files": [{"size": "x"}]})", "m").status().code(),
            StatusCode::kDataLoss);
}

TEST(ManifestTest, RefusesPathsThatLeaveTheFolder) {
  for (std::string_view bad : {"", "/etc/passwd", "../x", "a/../../x", "a/..", "..", "./a", "a//b", "a/", "a\\b",
                               "C:\\x", "MANIFEST.json"}) {
    Status status = ValidateCheckpointPath(bad);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    std::string quoted(1, '\'');
    quoted.append(bad).push_back('\'');
    EXPECT_NE(status.message().find(quoted), std::string::npos) << status.message();
  }
  EXPECT_EQ(ValidateCheckpointPath(std::string("a\0b", 3)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateCheckpointPath("a\nb").code(), StatusCode::kInvalidArgument);
  for (std::string_view good : {"a", "a/b/c", "...", "a..b", "model.ckpt-100.index", "sub/MANIFEST.json", ".hidden"}) {
    EXPECT_TRUE(ValidateCheckpointPath(good).ok()) << good;
  }
}

TEST(ManifestTest, DecodeRefusesCraftedPaths) {
  Result<CheckpointManifest> decoded = DecodeManifest(
      R"({"format_version": 1, "step": "1", "files": [{"path": "../../etc/cron.d/x", "size": "1"}]})", "m");
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find("../../etc/cron.d/x"), std::string::npos);
}

TEST(ManifestTest, RefusesDuplicatesAndFileFolderClashes) {
  EXPECT_EQ(ValidateCheckpointFiles({{"a", 0, 0}, {"a", 1, 0}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateCheckpointFiles({{"a", 0, 0}, {"a/b", 1, 0}}).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateCheckpointFiles({{"a", 0, 0}, {"a.b", 1, 0}, {"ab/c", 1, 0}}).ok());
}

TEST(LayoutTest, NamesAndParsesStepFolders) {
  CheckpointLayout layout("runs/7/");
  EXPECT_EQ(layout.StepPrefix(1234), "runs/7/step-000000001234/");
  EXPECT_EQ(layout.ManifestKey(5), "runs/7/step-000000000005/MANIFEST.json");
  EXPECT_EQ(layout.FileKey(5, "a/b"), "runs/7/step-000000000005/a/b");
  EXPECT_EQ(layout.LatestHintKey(), "runs/7/LATEST");
  EXPECT_EQ(layout.ParseStepPrefix("runs/7/step-000000001234/"), 1234);
  EXPECT_EQ(layout.ParseStepPrefix("runs/7/step-1234567890123/"), 1234567890123);
  EXPECT_EQ(layout.ParseStepPrefix("runs/7/step-12/"), std::nullopt);
  EXPECT_EQ(layout.ParseStepPrefix("runs/7/step--00000000001/"), std::nullopt);
  EXPECT_EQ(layout.ParseStepPrefix("runs/7/other/"), std::nullopt);
  EXPECT_EQ(layout.ParseStepPrefix("runs/8/step-000000001234/"), std::nullopt);

  CheckpointLayout bucket_root("");
  EXPECT_EQ(bucket_root.StepPrefix(1), "step-000000000001/");
  EXPECT_EQ(bucket_root.LatestHintKey(), "LATEST");
  EXPECT_EQ(bucket_root.ParseStepPrefix("step-000000000001/"), 1);
}

}  // namespace
}  // namespace spool::checkpoint
