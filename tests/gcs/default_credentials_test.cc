// The Application Default Credentials chain, with the environment faked: no
// network (the transport given is never used by the chain itself).
#include "spool/gcs/default_credentials.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::gcs {
namespace {

class NoNetwork : public HttpTransport {
 public:
  Result<HttpResponse> Send(const HttpRequest& request, ResponseSink*) override {
    ADD_FAILURE() << "unexpected request to " << request.url;
    return UnavailableError("no network in unit tests");
  }
};

class DefaultCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.empty());
    std::filesystem::create_directories(dir_ / "gcloud");
  }

  DefaultCredentialsEnvironment Env(bool on_gce = false, bool probe = false) {
    DefaultCredentialsEnvironment env;
    env.variables = spool::Env::Fixed(vars_);
    env.on_gce = [on_gce] { return on_gce; };
    env.metadata_server_answers = [probe](const std::string&) { return probe; };
    return env;
  }

  std::string WriteFile(const std::string& name, const std::string& contents) {
    auto path = dir_ / name;
    test_support::WriteFile(path, contents);
    return path.string();
  }

  const test_support::TempDir temp_{"spool-adc"};
  const std::filesystem::path dir_ = temp_.path();
  std::map<std::string, std::string> vars_;
  std::shared_ptr<HttpTransport> transport_ = std::make_shared<NoNetwork>();
};

constexpr char kAuthorizedUser[] =
    R"({"type":"authorized_user","client_id":"cid.apps.googleusercontent.com","client_secret":"s","refresh_token":"r"})";

TEST_F(DefaultCredentialsTest, GoogleApplicationCredentialsComesFirst) {
  vars_["GOOGLE_APPLICATION_CREDENTIALS"] = WriteFile("user.json", kAuthorizedUser);
  vars_["CLOUDSDK_CONFIG"] = (dir_ / "gcloud").string();
  WriteFile("gcloud/application_default_credentials.json", kAuthorizedUser);
  vars_["GCE_METADATA_HOST"] = "127.0.0.1:1";
  auto credentials = FindDefaultCredentials(transport_, Env(true));
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  EXPECT_NE((*credentials)->Describe().find("GOOGLE_APPLICATION_CREDENTIALS=" + (dir_ / "user.json").string()),
            std::string::npos)
      << (*credentials)->Describe();
}

TEST_F(DefaultCredentialsTest, ThenGcloudApplicationDefaultFile) {
  vars_["HOME"] = dir_.string();
  std::filesystem::create_directories(dir_ / ".config" / "gcloud");
  WriteFile(".config/gcloud/application_default_credentials.json", kAuthorizedUser);
  auto credentials = FindDefaultCredentials(transport_, Env(true));
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  EXPECT_NE((*credentials)->Describe().find("gcloud application-default credentials"), std::string::npos);
  EXPECT_NE((*credentials)->Describe().find("cid.apps.googleusercontent.com"), std::string::npos);
}

TEST_F(DefaultCredentialsTest, ThenTheMetadataServerWhenOverriddenOnGceOrAnswering) {
  vars_["GCE_METADATA_HOST"] = "127.0.0.1:8080";
  auto overridden = FindDefaultCredentials(transport_, Env());
  ASSERT_TRUE(overridden.ok());
  EXPECT_NE((*overridden)->Describe().find("metadata server at 127.0.0.1:8080"), std::string::npos);
  vars_.clear();
  auto on_gce = FindDefaultCredentials(transport_, Env(/*on_gce=*/true));
  ASSERT_TRUE(on_gce.ok());
  EXPECT_NE((*on_gce)->Describe().find("metadata server at 169.254.169.254"), std::string::npos);
  auto probed = FindDefaultCredentials(transport_, Env(false, /*probe=*/true));
  ASSERT_TRUE(probed.ok());
}

TEST_F(DefaultCredentialsTest, NothingFoundSaysWhatToSet) {
  auto none = FindDefaultCredentials(transport_, Env());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(none.status().message().find("GOOGLE_APPLICATION_CREDENTIALS"), std::string::npos);
  EXPECT_NE(none.status().message().find("STORAGE_EMULATOR_HOST"), std::string::npos);
}

TEST_F(DefaultCredentialsTest, BadFilesAreNamedWithoutTheirContents) {
  vars_["GOOGLE_APPLICATION_CREDENTIALS"] = (dir_ / "missing.json").string();
  auto missing = FindDefaultCredentials(transport_, Env());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.json"), std::string::npos);
  // Missing credentials, not a missing object: never NotFound.
  EXPECT_EQ(missing.status().code(), StatusCode::kUnauthenticated) << missing.status().ToString();

  vars_["GOOGLE_APPLICATION_CREDENTIALS"] = WriteFile("garbage.json", "top-secret-not-json");
  auto garbage = FindDefaultCredentials(transport_, Env());
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().message().find("top-secret"), std::string::npos);

  vars_["GOOGLE_APPLICATION_CREDENTIALS"] =
      WriteFile("external.json", R"({"type":"external_account","audience":"//iam.googleapis.com/x"})");
  auto external = FindDefaultCredentials(transport_, Env());
  ASSERT_FALSE(external.ok());
  EXPECT_EQ(external.status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace spool::gcs
