// Every step of the credential chain, the chain's order and the refreshing
// cache. STS, container and instance-metadata steps talk to loopback
// stand-ins (servers/credentials_server.py) that check what they receive.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <thread>

#include "spool/s3/credential_providers.h"
#include "tests/s3/loopback_server.h"
#include "tests/support/files.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/temp_dir.h"

namespace spool::s3 {
namespace {

namespace fs = std::filesystem;
using testing::LoopbackServer;

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(folder_.empty());
    http_ = MakeCurlTransport({});
  }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = folder_ / name;
    test_support::WriteFile(path, text);
    return path.string();
  }

  // An environment with no credentials anywhere but what the test adds.
  std::map<std::string, std::string> Empty() {
    return {{"HOME", folder_.string()}, {"AWS_EC2_METADATA_DISABLED", "true"}};
  }

  const test_support::TempDir temp_{"spool-credentials"};
  const fs::path folder_ = temp_.path();
  std::shared_ptr<HttpTransport> http_;
};

TEST_F(CredentialsTest, EnvironmentKeysAndSessionToken) {
  auto env = Empty();
  env["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  env["AWS_SECRET_ACCESS_KEY"] = "env-secret";
  env["AWS_SESSION_TOKEN"] = "env-token";
  auto got = MakeEnvironmentCredentials(Env::Fixed(env))->Get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->access_key_id, "AKIDENV");
  EXPECT_EQ(got->secret_access_key, "env-secret");
  EXPECT_EQ(got->session_token, "env-token");
}

TEST_F(CredentialsTest, EnvironmentWithOnlyOneKeyIsAnErrorAndWithNoneNotFound) {
  auto env = Empty();
  EXPECT_EQ(MakeEnvironmentCredentials(Env::Fixed(env))->Get().status().code(), StatusCode::kNotFound);
  env["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  auto half = MakeEnvironmentCredentials(Env::Fixed(env))->Get();
  EXPECT_EQ(half.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(half.status().message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
}

TEST_F(CredentialsTest, SharedCredentialsFileWithProfiles) {
  fs::create_directories(folder_ / ".aws");
  Write(".aws/credentials",
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n\n"
        "# a comment\n[dev]\naws_access_key_id=AKIDDEV\naws_secret_access_key=dev-secret\n"
        "aws_session_token = dev-token\n");
  auto env = Empty();
  auto by_default = MakeProfileCredentials(Env::Fixed(env), "")->Get();
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  EXPECT_EQ(by_default->access_key_id, "AKIDDEFAULT");

  env["AWS_PROFILE"] = "dev";
  auto dev = MakeProfileCredentials(Env::Fixed(env), "")->Get();
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(dev->access_key_id, "AKIDDEV");
  EXPECT_EQ(dev->session_token, "dev-token");

  auto explicit_profile = MakeProfileCredentials(Env::Fixed(env), "default")->Get();
  ASSERT_TRUE(explicit_profile.ok());
  EXPECT_EQ(explicit_profile->access_key_id, "AKIDDEFAULT");

  EXPECT_EQ(MakeProfileCredentials(Env::Fixed(env), "nope")->Get().status().code(), StatusCode::kNotFound);
}

TEST_F(CredentialsTest, FilesNamedByTheEnvironmentAndConfigProfiles) {
  auto env = Empty();
  env["AWS_SHARED_CREDENTIALS_FILE"] = Write("creds", "[other]\naws_access_key_id = X\naws_secret_access_key = Y\n");
  env["AWS_CONFIG_FILE"] =
      Write("config", "[profile team]\naws_access_key_id = AKIDCONFIG\naws_secret_access_key = config-secret\n");
  auto team = MakeProfileCredentials(Env::Fixed(env), "team")->Get();
  ASSERT_TRUE(team.ok()) << team.status().ToString();
  EXPECT_EQ(team->access_key_id, "AKIDCONFIG");
}

TEST_F(CredentialsTest, CredentialProcess) {
  auto env = Empty();
  const std::string script = Write("process.sh",
                                   "#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": \"AKIDPROCESS\", "
                                   "\"SecretAccessKey\": \"process-secret\", \"SessionToken\": \"process-token\", "
                                   "\"Expiration\": \"2099-01-01T00:00:00Z\"}'\n");
  fs::permissions(script, fs::perms::owner_all);
  env["AWS_CONFIG_FILE"] = Write("config", "[profile proc]\ncredential_process = " + script + "\n");
  auto got = MakeProfileCredentials(Env::Fixed(env), "proc")->Get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->access_key_id, "AKIDPROCESS");
  EXPECT_EQ(got->session_token, "process-token");
  ASSERT_TRUE(got->expiration.has_value());

  env["AWS_CONFIG_FILE"] = Write("config2", "[profile broken]\ncredential_process = /bin/false\n");
  auto failed = MakeProfileCredentials(Env::Fixed(env), "broken")->Get();
  EXPECT_EQ(failed.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(failed.status().message().find("broken"), std::string::npos) << failed.status().ToString();
}

TEST_F(CredentialsTest, WebIdentityViaStsRereadsTheTokenFileAtEveryRefresh) {
  const std::string token_file = Write("token", "token-one\n");
  const std::string role = "arn:aws:iam::123456789012:role/spool";
  LoopbackServer sts("credentials_server.py", {"sts", role, token_file});
  ASSERT_NE(sts.port(), 0);
  auto env = Empty();
  env["AWS_WEB_IDENTITY_TOKEN_FILE"] = token_file;
  env["AWS_ROLE_ARN"] = role;
  env["AWS_ENDPOINT_URL_STS"] = sts.url();
  auto provider = MakeWebIdentityCredentials(Env::Fixed(env), "", "us-east-1", http_);
  auto first = provider->Get();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->access_key_id, "ASIAtoken-one");
  EXPECT_EQ(first->session_token, "sts-session-token");
  ASSERT_TRUE(first->expiration.has_value());

  // Kubernetes rotates the token; the server expires credentials within the
  // refresh window, so the next Get asks again with the new token.
  Write("token", "token-two\n");
  auto second = provider->Get();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->access_key_id, "ASIAtoken-two");
}

TEST_F(CredentialsTest, WebIdentityErrorsNameTheRoleAndStsCode) {
  const std::string token_file = Write("token", "token-one");
  LoopbackServer sts("credentials_server.py", {"sts", "arn:aws:iam::1:role/right", token_file});
  ASSERT_NE(sts.port(), 0);
  auto env = Empty();
  env["AWS_WEB_IDENTITY_TOKEN_FILE"] = token_file;
  env["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/wrong";
  env["AWS_ENDPOINT_URL_STS"] = sts.url();
  auto got = MakeWebIdentityCredentials(Env::Fixed(env), "", "us-east-1", http_)->Get();
  EXPECT_EQ(got.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(got.status().message().find("arn:aws:iam::1:role/wrong"), std::string::npos) << got.status().ToString();
  EXPECT_NE(got.status().message().find("AccessDenied"), std::string::npos) << got.status().ToString();

  env.erase("AWS_WEB_IDENTITY_TOKEN_FILE");
  EXPECT_EQ(MakeWebIdentityCredentials(Env::Fixed(env), "", "us-east-1", http_)->Get().status().code(),
            StatusCode::kNotFound);
}

TEST_F(CredentialsTest, ContainerCredentialsWithAuthorizationTokenFile) {
  LoopbackServer container("credentials_server.py", {"container", "pod-identity-token"});
  ASSERT_NE(container.port(), 0);
  auto env = Empty();
  env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = container.url() + "/credentials";
  env["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = Write("pod-token", "pod-identity-token\n");
  auto got = MakeContainerCredentials(Env::Fixed(env), http_)->Get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->access_key_id, "ASIACONTAINER");
  EXPECT_EQ(got->session_token, "container-session-token");

  env.erase("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  env["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "wrong-token";
  auto refused = MakeContainerCredentials(Env::Fixed(env), http_)->Get();
  EXPECT_EQ(refused.status().code(), StatusCode::kUnauthenticated) << refused.status().ToString();

  EXPECT_EQ(MakeContainerCredentials(Env::Fixed(Empty()), http_)->Get().status().code(), StatusCode::kNotFound);

  env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = "http://example.com/credentials";
  EXPECT_EQ(MakeContainerCredentials(Env::Fixed(env), http_)->Get().status().code(), StatusCode::kInvalidArgument);
}

TEST_F(CredentialsTest, InstanceMetadataV2TokenThenRoleCredentials) {
  LoopbackServer imds("credentials_server.py", {"imds"});
  ASSERT_NE(imds.port(), 0);
  auto env = Empty();
  env.erase("AWS_EC2_METADATA_DISABLED");
  env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.url() + "/";
  auto got = MakeInstanceMetadataCredentials(Env::Fixed(env), http_)->Get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->access_key_id, "ASIAIMDS");
  EXPECT_EQ(got->session_token, "imds-session-token-2");

  env["AWS_EC2_METADATA_DISABLED"] = "true";
  EXPECT_EQ(MakeInstanceMetadataCredentials(Env::Fixed(env), http_)->Get().status().code(), StatusCode::kNotFound);
}

TEST_F(CredentialsTest, InstanceMetadataAbsentIsNotFound) {
  int port;
  {
    LoopbackServer gone("credentials_server.py", {"imds"});
    port = gone.port();
  }  // nothing listens on the port any more
  auto env = Empty();
  env.erase("AWS_EC2_METADATA_DISABLED");
  env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = "http://127.0.0.1:" + std::to_string(port);
  auto got = MakeInstanceMetadataCredentials(Env::Fixed(env), http_)->Get();
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().ToString();
}

TEST_F(CredentialsTest, DefaultChainOrder) {
  fs::create_directories(folder_ / ".aws");
  Write(".aws/credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = file-secret\n");
  auto env = Empty();
  env["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  env["AWS_SECRET_ACCESS_KEY"] = "env-secret";
  // Explicit keys first, then the environment, then the files.
  ChainOptions explicit_keys{"AKIDEXPLICIT", "explicit-secret", "", "", ""};
  EXPECT_EQ(MakeDefaultChain(explicit_keys, Env::Fixed(env), http_)->Get()->access_key_id, "AKIDEXPLICIT");
  EXPECT_EQ(MakeDefaultChain({}, Env::Fixed(env), http_)->Get()->access_key_id, "AKIDENV");
  env.erase("AWS_ACCESS_KEY_ID");
  env.erase("AWS_SECRET_ACCESS_KEY");
  auto chain = MakeDefaultChain({}, Env::Fixed(env), http_);
  EXPECT_EQ(chain->Get()->access_key_id, "AKIDFILE");
  EXPECT_EQ(chain->Name(), "profile default");
}

TEST_F(CredentialsTest, ContainerComesBeforeInstanceMetadataAndAfterFiles) {
  LoopbackServer container("credentials_server.py", {"container", "t"});
  LoopbackServer imds("credentials_server.py", {"imds"});
  auto env = Empty();
  env.erase("AWS_EC2_METADATA_DISABLED");
  env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.url();
  EXPECT_EQ(MakeDefaultChain({}, Env::Fixed(env), http_)->Get()->access_key_id, "ASIAIMDS");
  env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = container.url() + "/credentials";
  env["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "t";
  EXPECT_EQ(MakeDefaultChain({}, Env::Fixed(env), http_)->Get()->access_key_id, "ASIACONTAINER");
}

TEST_F(CredentialsTest, NoCredentialsAnywhereSaysWhatToDo) {
  auto got = MakeDefaultChain({}, Env::Fixed(Empty()), http_)->Get();
  // Not NotFound: a caller must never mistake missing credentials for a
  // missing object.
  EXPECT_EQ(got.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(got.status().message().find("AWS_ACCESS_KEY_ID"), std::string::npos) << got.status().ToString();
  EXPECT_NE(got.status().message().find("--no-sign-request"), std::string::npos);
}

// A provider whose answers the test controls, counting calls.
class ScriptedProvider : public CredentialsProvider {
 public:
  Result<Credentials> Get() override {
    std::unique_lock lock(mu_);
    ++calls_;
    cv_.wait(lock, [&] { return !blocked_; });
    Credentials credentials{"AKID" + std::to_string(calls_), "secret", "token", expiration_};
    return credentials;
  }
  std::string Name() const override { return "scripted"; }

  void SetExpiration(std::chrono::system_clock::time_point expiration) {
    std::lock_guard lock(mu_);
    expiration_ = expiration;
  }
  void Block(bool blocked) {
    std::lock_guard lock(mu_);
    blocked_ = blocked;
    cv_.notify_all();
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool blocked_ = false;
  int calls_ = 0;
  std::chrono::system_clock::time_point expiration_{};
};

TEST(RefreshingCredentials, CachesUntilTheRefreshWindowThenRefreshes) {
  auto inner = std::make_shared<ScriptedProvider>();
  std::atomic<int64_t> now_seconds{1'000'000};
  auto now = [&] { return std::chrono::system_clock::time_point(std::chrono::seconds(now_seconds.load())); };
  inner->SetExpiration(now() + std::chrono::hours(1));
  auto provider = MakeRefreshingCredentials(inner, std::chrono::minutes(5), now);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(provider->Get()->access_key_id, "AKID1");
  EXPECT_EQ(inner->calls(), 1);
  now_seconds += 56 * 60;  // 4 minutes before expiry: inside the window
  EXPECT_EQ(provider->Get()->access_key_id, "AKID2");
  EXPECT_EQ(inner->calls(), 2);
}

TEST(RefreshingCredentials, OneThreadRefreshesWhileOthersUseTheStillValidCredentials) {
  auto inner = std::make_shared<ScriptedProvider>();
  std::atomic<int64_t> now_seconds{1'000'000};
  auto now = [&] { return std::chrono::system_clock::time_point(std::chrono::seconds(now_seconds.load())); };
  inner->SetExpiration(now() + std::chrono::minutes(10));
  auto provider = MakeRefreshingCredentials(inner, std::chrono::minutes(5), now);
  ASSERT_EQ(provider->Get()->access_key_id, "AKID1");

  now_seconds += 6 * 60;  // inside the refresh window, still valid
  inner->Block(true);     // the refresh hangs until released
  std::thread refresher([&] { EXPECT_EQ(provider->Get()->access_key_id, "AKID2"); });
  while (inner->calls() < 2) std::this_thread::yield();
  std::vector<std::thread> others;
  std::atomic<int> old_answers{0};
  for (int i = 0; i < 16; ++i) {
    others.emplace_back([&] {
      if (provider->Get()->access_key_id == "AKID1") ++old_answers;
    });
  }
  for (auto& thread : others) thread.join();
  EXPECT_EQ(old_answers, 16);
  EXPECT_EQ(inner->calls(), 2);  // no stampede
  inner->SetExpiration(now() + std::chrono::hours(1));
  inner->Block(false);
  refresher.join();
  EXPECT_EQ(provider->Get()->access_key_id, "AKID2");
}

TEST(RefreshingCredentials, ExpiredCredentialsWaitForTheRefresh) {
  auto inner = std::make_shared<ScriptedProvider>();
  std::atomic<int64_t> now_seconds{1'000'000};
  auto now = [&] { return std::chrono::system_clock::time_point(std::chrono::seconds(now_seconds.load())); };
  inner->SetExpiration(now() + std::chrono::minutes(10));
  auto provider = MakeRefreshingCredentials(inner, std::chrono::minutes(5), now);
  ASSERT_EQ(provider->Get()->access_key_id, "AKID1");
  now_seconds += 11 * 60;  // expired
  inner->SetExpiration(now() + std::chrono::hours(1));
  EXPECT_EQ(provider->Get()->access_key_id, "AKID2");
}

// An IMDS that is there but busy answers the token request 503: that is
// Unavailable (the request's retry loop retries it), not "no credentials",
// and the chain finds the instance role once the IMDS answers.
TEST_F(CredentialsTest, BusyInstanceMetadataIsUnavailableNotNoCredentials) {
  int token_requests = 0;
  auto imds = std::make_shared<test_support::ScriptedTransport>([&](const HttpRequest& request) {
    using Answer = test_support::ScriptedTransport;
    if (request.url.ends_with("/latest/api/token")) {
      return ++token_requests <= 2 ? Answer::Reply(503) : Answer::Reply(200, "imds-token");
    }
    if (request.url.ends_with("/security-credentials/")) return Answer::Reply(200, "role\n");
    return Answer::Reply(200, R"({"Code":"Success","AccessKeyId":"ASIAIMDS","SecretAccessKey":"s",)"
                              R"("Token":"t","Expiration":"2099-01-01T00:00:00Z"})");
  });
  auto env = Empty();
  env.erase("AWS_EC2_METADATA_DISABLED");
  env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = "http://imds.invalid";
  auto chain = MakeDefaultChain({}, Env::Fixed(env), imds);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto busy = chain->Get();
    EXPECT_EQ(busy.status().code(), StatusCode::kUnavailable) << busy.status().ToString();
  }
  auto got = chain->Get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->access_key_id, "ASIAIMDS");
}

// "No credentials" stands for a while (no search per request), then the
// chain searches again and finds credentials that arrived late.
TEST(CredentialChain, NoCredentialsIsSearchedAgainAfterAWhile) {
  struct LateProvider : CredentialsProvider {
    std::atomic<int> calls{0};
    std::atomic<bool> ready{false};
    Result<Credentials> Get() override {
      ++calls;
      if (!ready) return NotFoundError("not yet");
      return Credentials{"AKIDLATE", "secret", "", std::nullopt};
    }
    std::string Name() const override { return "late"; }
  };
  auto late = std::make_shared<LateProvider>();
  std::atomic<int64_t> now_seconds{1'000};
  auto now = [&] { return std::chrono::steady_clock::time_point(std::chrono::seconds(now_seconds.load())); };
  auto chain = MakeChain({late}, now);
  EXPECT_EQ(chain->Get().status().code(), StatusCode::kUnauthenticated);
  late->ready = true;
  now_seconds += 10;
  EXPECT_EQ(chain->Get().status().code(), StatusCode::kUnauthenticated);  // the answer stands
  EXPECT_EQ(late->calls, 1);
  now_seconds += 30;
  auto got = chain->Get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->access_key_id, "AKIDLATE");
  EXPECT_EQ(late->calls, 2);
}

}  // namespace
}  // namespace spool::s3
