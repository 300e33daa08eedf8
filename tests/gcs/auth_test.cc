// The credential paths for real, against the local server's OAuth2 token
// endpoint (which verifies the JWT's RS256 signature with the public key of
// the key pair the fixture made) and its metadata-server endpoint. Buckets
// created with a token are private there: anonymous calls get 401.
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <fstream>
#include <sstream>

#include "spool/gcs/credentials.h"
#include "spool/gcs/default_credentials.h"
#include "spool/gcs/json.h"
#include "tests/gcs/test_server.h"

namespace spool::gcs {
namespace {

using testing::ArmFault;
using testing::Server;
using testing::UniqueName;

std::shared_ptr<HttpTransport> Transport() {
  static auto transport = MakeCurlTransport(HttpOptions{});
  return transport;
}

std::shared_ptr<GcsStore> StoreWith(std::shared_ptr<Credentials> credentials, const std::string& bucket) {
  GcsStoreOptions options;
  options.bucket = bucket;
  options.endpoint = Server().endpoint();
  options.credentials = std::move(credentials);
  auto store = GcsStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *store : nullptr;
}

// Creates a private bucket with `credentials` and writes, lists and reads in it.
void ExpectFullAccess(std::shared_ptr<Credentials> credentials) {
  const std::string bucket = UniqueName("private");
  auto store = StoreWith(credentials, bucket);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->client().InsertBucket(bucket, "spool-test").ok());
  ASSERT_TRUE(WriteAll(*store, "secret.txt", "only for the account").ok());
  EXPECT_EQ(*ReadAll(*store, "secret.txt"), "only for the account");
  EXPECT_EQ(ListAll(*store, ListOptions{})->objects.size(), 1u);

  auto anonymous = StoreWith(MakeAnonymousCredentials(), bucket);
  ASSERT_NE(anonymous, nullptr);
  auto denied = anonymous->Stat("secret.txt");
  EXPECT_EQ(denied.status().code(), StatusCode::kUnauthenticated) << denied.status().ToString();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(GcsAuth, ServiceAccountKeyFileSignsAJwtTheTokenEndpointAccepts) {
  auto credentials = LoadCredentialsFile(Server().File("service_account.json"), "test key", Transport());
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  EXPECT_NE((*credentials)->Describe().find("service account spool-test@spool-test.iam.gserviceaccount.com"),
            std::string::npos);
  ExpectFullAccess(*credentials);
}

TEST(GcsAuth, GoogleApplicationCredentialsThroughTheDefaultChain) {
  DefaultCredentialsEnvironment env;
  const std::string path = Server().File("service_account.json");
  env.variables = Env::Fixed({{"GOOGLE_APPLICATION_CREDENTIALS", path}});
  auto credentials = FindDefaultCredentials(Transport(), env);
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  EXPECT_NE((*credentials)->Describe().find("GOOGLE_APPLICATION_CREDENTIALS=" + path), std::string::npos);
  auto header = (*credentials)->AuthorizationHeader();
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_TRUE(header->starts_with("Bearer ya29."));
  EXPECT_EQ(*(*credentials)->AuthorizationHeader(), *header);  // cached
}

TEST(GcsAuth, AKeyTheServerDoesNotKnowIsRejectedAsUnauthenticated) {
  auto key = ParseCredentialsFile(ReadText(Server().File("service_account.json")));
  ASSERT_TRUE(key.ok());
  EVP_PKEY* other = EVP_RSA_gen(2048);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, other, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  key->private_key.assign(data, static_cast<size_t>(size));
  BIO_free(bio);
  EVP_PKEY_free(other);
  auto credentials = MakeServiceAccountCredentials(*key, "a forged key", Transport());
  ASSERT_TRUE(credentials.ok());
  auto header = (*credentials)->AuthorizationHeader();
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(header.status().message().find("Invalid JWT Signature"), std::string::npos)
      << header.status().ToString();
}

TEST(GcsAuth, AuthorizedUserRefreshToken) {
  auto credentials = LoadCredentialsFile(Server().File("authorized_user.json"), "gcloud ADC", Transport());
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  ExpectFullAccess(*credentials);

  auto file = ParseCredentialsFile(ReadText(Server().File("authorized_user.json")));
  ASSERT_TRUE(file.ok());
  file->refresh_token = "1//revoked";
  auto revoked = MakeAuthorizedUserCredentials(*file, "revoked", Transport());
  ASSERT_TRUE(revoked.ok());
  auto header = (*revoked)->AuthorizationHeader();
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(header.status().message().find("invalid_grant"), std::string::npos);
  EXPECT_EQ(header.status().message().find("1//revoked"), std::string::npos);
}

TEST(GcsAuth, MetadataServerIncludingOneThatIsNotReadyYet) {
  MetadataServerOptions options;
  options.host = "127.0.0.1:" + std::to_string(Server().port);
  // A GKE metadata server answers 503 for the first moments of a pod: the
  // store request's retry loop retries the token fetch with the request.
  ArmFault(R"({"kind":"status","status":503,"count":2,"match":"/computeMetadata/"})");
  auto credentials = MakeMetadataServerCredentials(options, Transport());
  EXPECT_NE(credentials->Describe().find("metadata server at 127.0.0.1"), std::string::npos);
  ExpectFullAccess(credentials);
}

TEST(GcsAuth, GceMetadataHostThroughTheDefaultChain) {
  DefaultCredentialsEnvironment env;
  const std::string host = "127.0.0.1:" + std::to_string(Server().port);
  env.variables = Env::Fixed({{"GCE_METADATA_HOST", host}});
  auto credentials = FindDefaultCredentials(Transport(), env);
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  auto header = (*credentials)->AuthorizationHeader();
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_TRUE(header->starts_with("Bearer "));
}

// What a store answers when its credentials are refused, per credential
// source: Unauthenticated (Python: PermissionError), never NotFound (Python:
// FileNotFoundError, which restart code takes for "no checkpoint yet"). The
// store asks for an object that does not exist, so a lie would show.
void ExpectStoreRefuses(std::shared_ptr<Credentials> credentials) {
  auto store = StoreWith(std::move(credentials), UniqueName("refused"));
  ASSERT_NE(store, nullptr);
  auto stat = store->Stat("no-such-object");
  EXPECT_EQ(stat.status().code(), StatusCode::kUnauthenticated) << stat.status().ToString();
  auto list = store->List(ListOptions{});
  EXPECT_EQ(list.status().code(), StatusCode::kUnauthenticated) << list.status().ToString();
}

TEST(GcsAuthErrors, ServiceAccountKeyTheTokenEndpointRefuses) {
  auto key = ParseCredentialsFile(ReadText(Server().File("service_account.json")));
  ASSERT_TRUE(key.ok());
  key->client_email = "someone-else@spool-test.iam.gserviceaccount.com";  // not the key's account
  auto credentials = MakeServiceAccountCredentials(*key, "a key of another account", Transport());
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  ExpectStoreRefuses(*credentials);
}

TEST(GcsAuthErrors, AdcFileWithARevokedRefreshToken) {
  auto file = ParseCredentialsFile(ReadText(Server().File("authorized_user.json")));
  ASSERT_TRUE(file.ok());
  file->refresh_token = "1//revoked";
  auto credentials = MakeAuthorizedUserCredentials(*file, "gcloud ADC", Transport());
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  ExpectStoreRefuses(*credentials);
}

TEST(GcsAuthErrors, MetadataServerWithoutAServiceAccount) {
  MetadataServerOptions options;
  options.host = "127.0.0.1:" + std::to_string(Server().port);
  ArmFault(R"({"kind":"status","status":404,"count":2,"match":"/computeMetadata/"})");  // Stat, List
  ExpectStoreRefuses(MakeMetadataServerCredentials(options, Transport()));
  testing::ClearFaults("/computeMetadata/");
}

TEST(GcsAuthErrors, AnExpiredOrRevokedTokenTheServiceRejects) {
  // A token the server never issued: the service answers 401, the store
  // fetches a new token once, and that one is refused too.
  auto credentials = MakeTokenCredentials(
      [] {
        return Result<AccessToken>(
            AccessToken{"ya29.expired", std::chrono::system_clock::now() + std::chrono::hours(1)});
      },
      "a token that expired");
  ExpectStoreRefuses(credentials);  // the server checks every token presented
}

TEST(GcsAuthErrors, MissingCredentialsFile) {
  auto credentials =
      LoadCredentialsFile(Server().File("no-such-key.json"), "GOOGLE_APPLICATION_CREDENTIALS", Transport());
  EXPECT_EQ(credentials.status().code(), StatusCode::kUnauthenticated) << credentials.status().ToString();
}

TEST(GcsAuth, EmulatorHostMeansNoCredentials) {
  const std::string bucket = UniqueName("emulated");
  ScopedEnvOverride emulator(Env::Fixed({{"STORAGE_EMULATOR_HOST", "127.0.0.1:" + std::to_string(Server().port)}}));
  GcsStoreOptions options;
  options.bucket = bucket;
  auto store = GcsStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_NE((*store)->DescribeAccess().find("anonymous"), std::string::npos);
  EXPECT_NE((*store)->DescribeAccess().find("http://127.0.0.1:"), std::string::npos);
  ASSERT_TRUE((*store)->client().InsertBucket(bucket, "p").ok());
  EXPECT_TRUE(WriteAll(**store, "k", "v").ok());
}

}  // namespace
}  // namespace spool::gcs
