// The "s3" factory's reading of StoreOptions: its settings, retry and the
// generic fields.
#include "spool/s3/register.h"

#include <gtest/gtest.h>

#include <memory>

namespace spool::s3 {
namespace {

TEST(S3Register, SettingsBecomeS3Options) {
  StoreOptions options;
  options.endpoint_url = "http://127.0.0.1:9";
  options.settings = {{"s3.region", "eu-west-1"},
                      {"s3.profile", "minio"},
                      {"s3.path_style", "true"},
                      {"s3.anonymous", "true"},
                      {"gs.anonymous", "false"}};  // another scheme's: ignored
  options.retry.policy.max_attempts = 3;
  Result<S3Options> s3 = S3OptionsFromStoreOptions(options);
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  EXPECT_EQ(s3->region, "eu-west-1");
  EXPECT_EQ(s3->profile, "minio");
  EXPECT_EQ(s3->addressing, AddressingStyle::kPath);
  EXPECT_TRUE(s3->anonymous);
  EXPECT_EQ(s3->endpoint_url, "http://127.0.0.1:9");
  EXPECT_EQ(s3->retry.policy.max_attempts, 3);
}

TEST(S3Register, DefaultsLeaveTheEnvironmentToDecide) {
  Result<S3Options> s3 = S3OptionsFromStoreOptions(StoreOptions{});
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ(s3->region, "");
  EXPECT_EQ(s3->profile, "");
  EXPECT_EQ(s3->addressing, AddressingStyle::kAuto);
  EXPECT_FALSE(s3->anonymous);
  StoreOptions not_path_style;
  not_path_style.settings["s3.path_style"] = "false";
  EXPECT_EQ(S3OptionsFromStoreOptions(not_path_style)->addressing, AddressingStyle::kAuto);
}

TEST(S3Register, UnknownSettingOrBadValueIsInvalidArgumentNamingIt) {
  StoreOptions unknown;
  unknown.settings["s3.regoin"] = "eu-west-1";
  Result<S3Options> s3 = S3OptionsFromStoreOptions(unknown);
  ASSERT_EQ(s3.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s3.status().message().find("s3.regoin"), std::string::npos) << s3.status().message();

  StoreOptions bad_bool;
  bad_bool.settings["s3.anonymous"] = "sometimes";
  s3 = S3OptionsFromStoreOptions(bad_bool);
  ASSERT_EQ(s3.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s3.status().message().find("s3.anonymous"), std::string::npos) << s3.status().message();
}

TEST(S3Register, RetriesAreCountedIntoTheGivenCounters) {
  StoreOptions options;
  options.counters = std::make_shared<RequestCounters>();
  int inner_calls = 0;
  options.retry.environment.on_retry = [&](const Status&, int, std::chrono::milliseconds) { ++inner_calls; };
  Result<S3Options> s3 = S3OptionsFromStoreOptions(options);
  ASSERT_TRUE(s3.ok());
  RemoteError slow_down;
  slow_down.http_status = 503;
  slow_down.service_code = "SlowDown";
  s3->retry.environment.on_retry(UnavailableError("slow down").WithRemote(slow_down), 1,
                                 std::chrono::milliseconds(0));
  EXPECT_EQ(options.counters->Snapshot().retries, 1u);
  EXPECT_EQ(options.counters->Snapshot().throttles, 1u);
  EXPECT_EQ(inner_calls, 1) << "the caller's own hook still runs";
}

}  // namespace
}  // namespace spool::s3
