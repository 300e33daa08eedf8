// The "gs" factory's reading of StoreOptions: its settings, retry and the
// generic fields.
#include "spool/gcs/register.h"

#include <gtest/gtest.h>

#include <memory>

namespace spool::gcs {
namespace {

Url BucketUrl() { return *ParseUrl("gs://my-bucket/key"); }

TEST(GcsRegister, StoreOptionsBecomeGcsStoreOptions) {
  StoreOptions options;
  options.endpoint_url = "http://127.0.0.1:9";
  options.ca_bundle = "/ca.pem";
  options.settings = {{"gs.anonymous", "true"}, {"s3.region", "eu-west-1"}};  // s3's: ignored
  options.retry.policy.max_attempts = 3;
  Result<GcsStoreOptions> gcs = GcsOptionsFromStoreOptions(BucketUrl(), options);
  ASSERT_TRUE(gcs.ok()) << gcs.status().ToString();
  EXPECT_EQ(gcs->bucket, "my-bucket");
  EXPECT_EQ(gcs->endpoint, "http://127.0.0.1:9");
  EXPECT_EQ(gcs->http.ca_bundle, "/ca.pem");
  EXPECT_TRUE(gcs->anonymous);
  EXPECT_EQ(gcs->retry.policy.max_attempts, 3);
  EXPECT_FALSE(GcsOptionsFromStoreOptions(BucketUrl(), StoreOptions{})->anonymous);
}

TEST(GcsRegister, UnknownSettingOrBadValueIsInvalidArgumentNamingIt) {
  StoreOptions unknown;
  unknown.settings["gs.project"] = "p";
  Result<GcsStoreOptions> gcs = GcsOptionsFromStoreOptions(BucketUrl(), unknown);
  ASSERT_EQ(gcs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gcs.status().message().find("gs.project"), std::string::npos) << gcs.status().message();

  StoreOptions bad_bool;
  bad_bool.settings["gs.anonymous"] = "yes please";
  gcs = GcsOptionsFromStoreOptions(BucketUrl(), bad_bool);
  ASSERT_EQ(gcs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gcs.status().message().find("gs.anonymous"), std::string::npos) << gcs.status().message();
}

TEST(GcsRegister, RetriesAreCountedIntoTheGivenCounters) {
  StoreOptions options;
  options.counters = std::make_shared<RequestCounters>();
  Result<GcsStoreOptions> gcs = GcsOptionsFromStoreOptions(BucketUrl(), options);
  ASSERT_TRUE(gcs.ok());
  gcs->retry.environment.on_retry(DeadlineExceededError("stalled"), 1, std::chrono::milliseconds(0));
  EXPECT_EQ(options.counters->Snapshot().retries, 1u);
  EXPECT_EQ(options.counters->Snapshot().throttles, 0u) << "a timeout is not a throttle";
}

}  // namespace
}  // namespace spool::gcs
