// Missing, refused or expired credentials fail an S3Store request as an
// authentication error, Unauthenticated or PermissionDenied (Python:
// PermissionError), never NotFound (Python: FileNotFoundError, which restart
// code takes for "no checkpoint yet"), for every source of the credential
// chain: environment, profile, web identity, container, instance metadata.
// The credential endpoints and the refusing S3 endpoint are the loopback
// stand-ins of servers/credentials_server.py; the store asks for an object
// that does not exist, so a NotFound would show.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "spool/s3/s3_store.h"
#include "tests/s3/loopback_server.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::s3 {
namespace {

using testing::LoopbackServer;

class S3CredentialErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temp_.path().empty());
    ASSERT_NE(closed_port_, 0);
  }

  // An environment with no credentials anywhere; the store's endpoint is
  // `endpoint` (by default a port nothing listens on: the request must fail
  // before it is sent).
  std::map<std::string, std::string> Empty(const std::string& endpoint = "") {
    return {{"HOME", temp_.path().string()},
            {"AWS_EC2_METADATA_DISABLED", "true"},
            {"AWS_REGION", "us-east-1"},
            {"AWS_ENDPOINT_URL", endpoint.empty() ? "http://127.0.0.1:" + std::to_string(closed_port_) : endpoint}};
  }

  std::string Write(const std::string& name, const std::string& text) {
    const auto path = temp_.path() / name;
    test_support::WriteFile(path, text);
    return path.string();
  }

  // Stat (a HEAD, whose answer has no error document) and List of a store
  // opened with `env` fail with `code`.
  static void ExpectRefused(const std::map<std::string, std::string>& env, StatusCode code) {
    auto store = S3Store::Open("bucket", S3Options{}, Env::Fixed(env));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto list = (*store)->List(ListOptions{});
    EXPECT_EQ(list.status().code(), code) << list.status().ToString();
    auto stat = (*store)->Stat("no-such-object");
    EXPECT_EQ(stat.status().code(), code) << stat.status().ToString();
  }

  static int ClosedPort() {
    LoopbackServer gone("credentials_server.py", {"imds"});
    return gone.port();
  }  // nothing listens on the port any more

  const test_support::TempDir temp_{"spool-s3-credential-errors"};
  const int closed_port_ = ClosedPort();
};

TEST_F(S3CredentialErrors, NoCredentialsAnywhere) { ExpectRefused(Empty(), StatusCode::kUnauthenticated); }

TEST_F(S3CredentialErrors, EnvironmentKeysTheStoreDoesNotKnow) {
  LoopbackServer s3("credentials_server.py", {"refuse", "403", "InvalidAccessKeyId"});
  ASSERT_NE(s3.port(), 0);
  auto env = Empty(s3.url());
  env["AWS_ACCESS_KEY_ID"] = "AKIDUNKNOWN";
  env["AWS_SECRET_ACCESS_KEY"] = "secret";
  ExpectRefused(env, StatusCode::kUnauthenticated);
}

TEST_F(S3CredentialErrors, EnvironmentSessionTokenThatExpired) {
  LoopbackServer s3("credentials_server.py", {"refuse", "400", "ExpiredToken"});
  ASSERT_NE(s3.port(), 0);
  auto env = Empty(s3.url());
  env["AWS_ACCESS_KEY_ID"] = "ASIAEXPIRED";
  env["AWS_SECRET_ACCESS_KEY"] = "secret";
  env["AWS_SESSION_TOKEN"] = "expired";
  ExpectRefused(env, StatusCode::kUnauthenticated);
  // A HEAD refused with 400 reads as an expired token, not a bad argument.
  auto store = S3Store::Open("bucket", S3Options{}, Env::Fixed(env));
  ASSERT_TRUE(store.ok());
  auto stat = (*store)->Stat("no-such-object");
  EXPECT_NE(stat.status().message().find("ExpiredToken"), std::string::npos) << stat.status().ToString();
}

TEST_F(S3CredentialErrors, ProfileKeysWithTheWrongSecret) {
  LoopbackServer s3("credentials_server.py", {"refuse", "403", "SignatureDoesNotMatch"});
  ASSERT_NE(s3.port(), 0);
  auto env = Empty(s3.url());
  env["AWS_SHARED_CREDENTIALS_FILE"] =
      Write("credentials", "[train]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = wrong\n");
  env["AWS_PROFILE"] = "train";
  ExpectRefused(env, StatusCode::kUnauthenticated);
}

TEST_F(S3CredentialErrors, ProfileThatDoesNotExist) {
  auto env = Empty();
  env["AWS_SHARED_CREDENTIALS_FILE"] =
      Write("credentials", "[other]\naws_access_key_id = A\naws_secret_access_key = B\n");
  env["AWS_PROFILE"] = "train";
  ExpectRefused(env, StatusCode::kUnauthenticated);
}

TEST_F(S3CredentialErrors, WebIdentityTokenFileMissing) {
  auto env = Empty();
  env["AWS_WEB_IDENTITY_TOKEN_FILE"] = (temp_.path() / "not-mounted").string();
  env["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/r";
  ExpectRefused(env, StatusCode::kUnauthenticated);
}

TEST_F(S3CredentialErrors, WebIdentityTokenStsRejects) {
  const std::string token_file = Write("token", "the-current-token");
  LoopbackServer sts("credentials_server.py", {"sts", "arn:aws:iam::1:role/r", token_file});
  ASSERT_NE(sts.port(), 0);
  auto env = Empty();
  env["AWS_WEB_IDENTITY_TOKEN_FILE"] = Write("stale-token", "a-stale-token");  // InvalidIdentityToken
  env["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/r";
  env["AWS_ENDPOINT_URL_STS"] = sts.url();
  ExpectRefused(env, StatusCode::kUnauthenticated);

  env["AWS_WEB_IDENTITY_TOKEN_FILE"] = token_file;
  env["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/not-trusted";  // AccessDenied
  ExpectRefused(env, StatusCode::kPermissionDenied);
}

TEST_F(S3CredentialErrors, ContainerEndpointRejectsTheAuthorizationToken) {
  LoopbackServer container("credentials_server.py", {"container", "pod-identity-token"});
  ASSERT_NE(container.port(), 0);
  auto env = Empty();
  env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = container.url() + "/credentials";
  env["AWS_CONTAINER_AUTHORIZATION_TOKEN"] = "an-expired-token";
  ExpectRefused(env, StatusCode::kUnauthenticated);
}

TEST_F(S3CredentialErrors, InstanceMetadataWithNoRole) {
  LoopbackServer imds("credentials_server.py", {"imds", "no-role"});
  ASSERT_NE(imds.port(), 0);
  auto env = Empty();
  env.erase("AWS_EC2_METADATA_DISABLED");
  env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.url();
  ExpectRefused(env, StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace spool::s3
