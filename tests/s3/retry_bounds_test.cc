// One retry loop for an S3 request and the credentials it needs: a
// credential fetch (web identity via STS, container credentials) makes one
// request per attempt of the store request, so with max_attempts = N a
// request sends at most N credential requests and N store requests, and the
// error says "gave up after N attempts" once (core/retry.h). Credentials
// fetched once are reused by the following attempts. The backoff runs on a
// fake clock; the transport answers in-process and counts what reaches each
// endpoint.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "spool/core/http/transport.h"
#include "spool/core/retry.h"
#include "spool/s3/client.h"
#include "spool/s3/config.h"
#include "spool/s3/credential_providers.h"
#include "spool/s3/s3_store.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::s3 {
namespace {

constexpr int kMaxAttempts = 3;
constexpr char kStoreHost[] = "127.0.0.1:9";
constexpr char kCredentialsHost[] = "127.0.0.1:8";
constexpr char kRole[] = "arn:aws:iam::123456789012:role/spool";

// Answers the credential endpoint (STS or container, on kCredentialsHost)
// and the store (kStoreHost). The credential endpoint fails its first
// `credential_failures` requests with 503 (-1: all of them); the store
// answers every request with `store_status`.
class TwoEndpointTransport : public HttpTransport {
 public:
  TwoEndpointTransport(int credential_failures, int store_status)
      : credential_failures_(credential_failures), store_status_(store_status) {}

  Result<HttpResponse> Send(const HttpRequest& request, ResponseSink* sink) override {
    HttpResponse response;
    std::string body;
    {
      std::lock_guard lock(mu_);
      if (request.url.find(kCredentialsHost) != std::string::npos) {
        ++credential_requests_;
        const bool fail = credential_failures_ < 0 || credential_requests_ <= credential_failures_;
        response.status = fail ? 503 : 200;
        body = fail ? "busy" : CredentialsAnswer(request);
      } else {
        ++store_requests_;
        last_authorization_ = request.headers.Get("Authorization").value_or("");
        response.status = store_status_;
        if (store_status_ == 200) {
          response.headers.Set("Content-Length", "5");
          response.headers.Set("ETag", "\"v1\"");
        } else {
          body = "<Error><Code>ServiceUnavailable</Code><Message>busy</Message></Error>";
        }
      }
    }
    if (!response.ok()) {
      response.error_body = body;
      return response;
    }
    if (sink) {
      SPOOL_RETURN_IF_ERROR(sink->OnHeaders(response.status, response.headers));
      if (!body.empty()) SPOOL_RETURN_IF_ERROR(sink->Write(body));
    }
    response.bytes_received = body.size();
    return response;
  }

  int credential_requests() {
    std::lock_guard lock(mu_);
    return credential_requests_;
  }
  int store_requests() {
    std::lock_guard lock(mu_);
    return store_requests_;
  }
  std::string last_authorization() {
    std::lock_guard lock(mu_);
    return last_authorization_;
  }

 private:
  static std::string CredentialsAnswer(const HttpRequest& request) {
    if (request.method == "POST") {  // STS AssumeRoleWithWebIdentity
      return "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
             "<AccessKeyId>ASIAFETCHED</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey>"
             "<SessionToken>sts-token</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration>"
             "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
    }
    return R"({"AccessKeyId": "ASIAFETCHED", "SecretAccessKey": "container-secret", "Token": "t",)"
           R"( "Expiration": "2099-01-01T00:00:00Z"})";
  }

  const int credential_failures_;
  const int store_status_;
  std::mutex mu_;
  int credential_requests_ = 0;
  int store_requests_ = 0;
  std::string last_authorization_;
};

enum class Source { kWebIdentity, kContainer };

class S3RetryBounds : public ::testing::TestWithParam<Source> {
 protected:
  std::shared_ptr<S3Store> Open(int credential_failures, int store_status) {
    transport_ = std::make_shared<TwoEndpointTransport>(credential_failures, store_status);
    std::map<std::string, std::string> env{{"HOME", temp_.path().string()},
                                           {"AWS_EC2_METADATA_DISABLED", "true"},
                                           {"AWS_ENDPOINT_URL", std::string("http://") + kStoreHost},
                                           {"AWS_REGION", "us-east-1"}};
    if (GetParam() == Source::kWebIdentity) {
      const std::string token_file = (temp_ / "token").string();
      test_support::WriteFile(token_file, "web-identity-token");
      env["AWS_WEB_IDENTITY_TOKEN_FILE"] = token_file;
      env["AWS_ROLE_ARN"] = kRole;
      env["AWS_ENDPOINT_URL_STS"] = std::string("http://") + kCredentialsHost;
    } else {
      env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = std::string("http://") + kCredentialsHost + "/credentials";
    }
    S3Options options;
    options.retry.policy.max_attempts = kMaxAttempts;
    options.retry.policy.initial_backoff = std::chrono::seconds(5);  // felt, if the real clock ran
    options.retry.policy.max_backoff = std::chrono::seconds(20);
    options.retry.environment = FakeClock();
    auto config = ResolveConfig(options, "bucket", Env::Fixed(env));
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    if (!config.ok()) return nullptr;
    auto credentials = MakeDefaultChain(ChainOptions{}, Env::Fixed(env), transport_);
    auto client = std::make_shared<S3Client>(*config, "bucket", transport_, credentials);
    return std::make_shared<S3Store>(client, nullptr, nullptr);
  }

  RetryEnvironment FakeClock() {
    RetryEnvironment env;
    env.now = [this] { return now_; };
    env.sleep = [this](std::chrono::milliseconds delay) { now_ += delay; };
    env.uniform01 = [] { return 0.5; };
    return env;
  }

  static int Count(const std::string& text, const std::string& part) {
    int n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  }

  const test_support::TempDir temp_{"spool-s3-retry-bounds"};
  std::chrono::steady_clock::time_point now_{};
  std::shared_ptr<TwoEndpointTransport> transport_;
};

TEST_P(S3RetryBounds, CredentialEndpointFailingMakesMaxAttemptsInAllAndSaysSoOnce) {
  auto store = Open(/*credential_failures=*/-1, /*store_status=*/503);
  auto stat = store->Stat("k");
  ASSERT_FALSE(stat.ok());
  EXPECT_EQ(stat.status().code(), StatusCode::kUnavailable) << stat.status().ToString();
  EXPECT_EQ(transport_->credential_requests(), kMaxAttempts);  // not kMaxAttempts squared
  EXPECT_EQ(transport_->store_requests(), 0);                  // nothing to sign with
  const std::string message = stat.status().message();
  EXPECT_EQ(Count(message, "gave up after"), 1) << message;
  EXPECT_NE(message.find("gave up after 3 attempts"), std::string::npos) << message;
  EXPECT_NE(message.find("HEAD s3://bucket/k"), std::string::npos) << message;
}

TEST_P(S3RetryBounds, CredentialsFetchedOnceServeEveryAttemptOfAFailingStore) {
  auto store = Open(/*credential_failures=*/0, /*store_status=*/503);
  auto stat = store->Stat("k");
  ASSERT_FALSE(stat.ok());
  EXPECT_EQ(stat.status().code(), StatusCode::kUnavailable) << stat.status().ToString();
  EXPECT_EQ(transport_->credential_requests(), 1);
  EXPECT_EQ(transport_->store_requests(), kMaxAttempts);
  EXPECT_EQ(Count(stat.status().message(), "gave up after"), 1) << stat.status().ToString();
}

TEST_P(S3RetryBounds, ATransientCredentialFailureIsRetriedByTheRequestsLoop) {
  auto store = Open(/*credential_failures=*/1, /*store_status=*/200);
  auto stat = store->Stat("k");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(transport_->credential_requests(), 2);
  EXPECT_EQ(transport_->store_requests(), 1);
  EXPECT_NE(transport_->last_authorization().find("Credential=ASIAFETCHED/"), std::string::npos);
  // Cached: a second request fetches nothing.
  ASSERT_TRUE(store->Stat("k").ok());
  EXPECT_EQ(transport_->credential_requests(), 2);
  EXPECT_EQ(transport_->store_requests(), 2);
}

TEST_P(S3RetryBounds, PresigningRetriesATransientCredentialFailureItself) {
  auto store = Open(/*credential_failures=*/1, /*store_status=*/200);
  auto url = store->client().PresignGet("k", std::chrono::minutes(5));
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_NE(url->find("X-Amz-Credential=ASIAFETCHED"), std::string::npos) << *url;
  EXPECT_EQ(transport_->credential_requests(), 2);
  EXPECT_EQ(transport_->store_requests(), 0);  // presigning sends nothing
}

INSTANTIATE_TEST_SUITE_P(Sources, S3RetryBounds, ::testing::Values(Source::kWebIdentity, Source::kContainer),
                         [](const ::testing::TestParamInfo<Source>& info) {
                           return info.param == Source::kWebIdentity ? "WebIdentity" : "Container";
                         });

}  // namespace
}  // namespace spool::s3
