// Every GcsStore operation against a service that always answers 503 makes
// at most policy.max_attempts attempts per HTTP exchange, and exactly as
// many as the design says: reads and preconditioned writes are retried, an
// unconditional insert or delete is tried once and then reconciled with a
// read. The backoff runs on a fake clock, so the test takes no real time.
//
// With credentials (the metadata server, a service-account key and an
// authorized user at an OAuth token endpoint), the token fetch is part of the
// attempt: with max_attempts = N a request sends at most N token requests and
// N store requests, the error says "gave up after N attempts" once, and a
// token fetched once serves every later attempt (core/retry.h).
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "spool/core/http/transport.h"
#include "spool/core/retry.h"
#include "spool/gcs/credentials.h"
#include "spool/gcs/gcs_store.h"
#include "spool/gcs/resources.h"
#include "tests/support/fake_retry_clock.h"

namespace spool::gcs {
namespace {

constexpr int kMaxAttempts = 3;

// Answers every request with 503, except (when asked) the start of a
// resumable session, and counts requests by kind ("GET", "POST insert",
// "POST resumable", "PUT session", "DELETE object", "DELETE session").
class Always503Transport : public HttpTransport {
 public:
  explicit Always503Transport(bool sessions_start = false) : sessions_start_(sessions_start) {}

  Result<HttpResponse> Send(const HttpRequest& request, ResponseSink* sink) override {
    const std::string kind = KindOf(request);
    {
      std::lock_guard lock(mu_);
      ++counts_[kind];
    }
    HttpResponse response;
    if (sessions_start_ && kind == "POST resumable") {
      response.status = 200;
      response.headers.Set("Location", "http://127.0.0.1:9/upload/session-1");
      if (sink) SPOOL_RETURN_IF_ERROR(sink->OnHeaders(response.status, response.headers));
      return response;
    }
    response.status = 503;
    response.error_body = R"({"error":{"code":503,"message":"backend unavailable"}})";
    return response;
  }

  int count(const std::string& kind) {
    std::lock_guard lock(mu_);
    return counts_[kind];
  }
  int total() {
    std::lock_guard lock(mu_);
    int sum = 0;
    for (const auto& [kind, n] : counts_) sum += n;
    return sum;
  }

 private:
  static std::string KindOf(const HttpRequest& request) {
    const bool session = request.url.find("/upload/session-") != std::string::npos;
    if (request.method == "POST") {
      return request.url.find("uploadType=resumable") != std::string::npos ? "POST resumable" : "POST insert";
    }
    if (request.method == "DELETE") return session ? "DELETE session" : "DELETE object";
    if (request.method == "PUT") return "PUT session";
    return request.method;
  }

  const bool sessions_start_;
  std::mutex mu_;
  std::map<std::string, int> counts_;
};

// A clock that only moves when the retry loop sleeps.
using FakeClock = test_support::FakeRetryClock;

class GcsRetryBounds : public ::testing::Test {
 protected:
  // `backoff`: the first delay. The resumable recovery (resumable_upload.h)
  // takes the policy but sleeps on the real clock, so its test passes 0.
  std::shared_ptr<GcsStore> Open(bool sessions_start = false,
                                 std::chrono::milliseconds backoff = std::chrono::seconds(5)) {
    transport_ = std::make_shared<Always503Transport>(sessions_start);
    GcsStoreOptions options;
    options.bucket = "b";
    options.endpoint = "http://127.0.0.1:9";  // never contacted: the transport answers
    options.transport = transport_;
    options.credentials = MakeAnonymousCredentials();
    options.retry.policy.max_attempts = kMaxAttempts;
    // Long backoffs: they would be felt if the real clock were used.
    options.retry.policy.initial_backoff = backoff;
    options.retry.policy.max_backoff = backoff * 4;
    options.retry.environment = clock_.Environment();
    options.resumable_threshold = 256 << 10;
    options.chunk_size = 256 << 10;
    auto store = GcsStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? *store : nullptr;
  }

  static void ExpectUnavailable(const Status& status) {
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
    EXPECT_EQ(status.remote().http_status, 503) << status.ToString();
  }

  FakeClock clock_;
  std::shared_ptr<Always503Transport> transport_;
};

TEST_F(GcsRetryBounds, StatMakesExactlyMaxAttempts) {
  auto store = Open();
  ExpectUnavailable(store->Stat("k").status());
  EXPECT_EQ(transport_->count("GET"), kMaxAttempts);
  EXPECT_EQ(transport_->total(), kMaxAttempts);
  EXPECT_EQ(static_cast<int>(clock_.retried_attempts.size()), kMaxAttempts - 1);
  EXPECT_GT(clock_.slept.count(), 0);  // the backoff ran, on the fake clock
}

TEST_F(GcsRetryBounds, ListMakesExactlyMaxAttempts) {
  auto store = Open();
  ExpectUnavailable(store->List(ListOptions{}).status());
  EXPECT_EQ(transport_->count("GET"), kMaxAttempts);
  EXPECT_EQ(transport_->total(), kMaxAttempts);
}

TEST_F(GcsRetryBounds, OpenReadMakesExactlyMaxAttempts) {
  auto store = Open();
  ExpectUnavailable(store->OpenRead("k").status());
  EXPECT_EQ(transport_->count("GET"), kMaxAttempts);
  EXPECT_EQ(transport_->total(), kMaxAttempts);
}

TEST_F(GcsRetryBounds, UnconditionalSmallWriteIsSentOnceThenReconciledByOneRead) {
  auto store = Open();
  auto writer = store->OpenWrite("k");
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append("small object").ok());
  ExpectUnavailable((*writer)->Close().status());
  EXPECT_EQ(transport_->count("POST insert"), 1);  // non-idempotent: one attempt
  EXPECT_EQ(transport_->count("GET"), kMaxAttempts);  // "is it ours?" gets no answer
  EXPECT_EQ(transport_->total(), 1 + kMaxAttempts);
}

TEST_F(GcsRetryBounds, CreateOnlyWriteIsRetriedUpToMaxAttempts) {
  auto store = Open();
  WriteOptions options;
  options.if_not_exists = true;  // ifGenerationMatch=0: safe to repeat
  auto writer = store->OpenWrite("k", options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append("small object").ok());
  ExpectUnavailable((*writer)->Close().status());
  EXPECT_EQ(transport_->count("POST insert"), kMaxAttempts);
  EXPECT_EQ(transport_->total(), kMaxAttempts);
}

TEST_F(GcsRetryBounds, ResumableWriteStartMakesExactlyMaxAttempts) {
  auto store = Open();
  ExpectUnavailable(store->OpenResumableWrite("k").status());
  EXPECT_EQ(transport_->count("POST resumable"), kMaxAttempts);
  EXPECT_EQ(transport_->total(), kMaxAttempts);
}

TEST_F(GcsRetryBounds, ResumableChunksAreBoundedByMaxAttempts) {
  auto store = Open(/*sessions_start=*/true, std::chrono::milliseconds(0));
  auto writer = store->OpenResumableWrite("k");
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append(std::string(1000, 'x')).ok());
  EXPECT_FALSE((*writer)->Close().ok());
  EXPECT_EQ(transport_->count("POST resumable"), 1);
  // The last chunk, then "how much do you have?" twice: one exchange's
  // worth of attempts, however the resumable recovery spends them.
  EXPECT_EQ(transport_->count("PUT session"), kMaxAttempts);
  EXPECT_EQ(transport_->count("DELETE session"), 1);  // cancelling the session is tried once
}

TEST_F(GcsRetryBounds, DeleteIsSentOnceThenReconciledByOneRead) {
  auto store = Open();
  ExpectUnavailable(store->Delete("k"));
  EXPECT_EQ(transport_->count("DELETE object"), 1);  // unconditional: one attempt
  EXPECT_EQ(transport_->count("GET"), kMaxAttempts);
  EXPECT_EQ(transport_->total(), 1 + kMaxAttempts);
}

TEST(GcsIdempotency, FollowsThePreconditions) {
  EXPECT_EQ(IdempotencyOf(Preconditions{}), Idempotency::kNonIdempotent);
  Preconditions generation;
  generation.if_generation_match = 0;
  EXPECT_EQ(IdempotencyOf(generation), Idempotency::kIdempotent);
  Preconditions metageneration;
  metageneration.if_metageneration_match = 3;
  EXPECT_EQ(IdempotencyOf(metageneration), Idempotency::kIdempotent);
  Preconditions not_match;
  not_match.if_generation_not_match = 7;
  EXPECT_EQ(IdempotencyOf(not_match), Idempotency::kNonIdempotent);
}

// ---- With credentials: one loop for the token and the request.

constexpr char kTokenHost[] = "127.0.0.1:8";  // the token endpoint or metadata server
constexpr char kObjectJson[] =
    R"({"kind":"storage#object","name":"k","bucket":"b","generation":"1","metageneration":"1",)"
    R"("size":"5","updated":"2024-01-01T00:00:00Z"})";

// Answers the token endpoint (kTokenHost) and the store (everything else).
// The token endpoint fails its first `token_failures` requests with 503
// (-1: all of them) and, when `token_refused`, refuses every one (an OAuth
// endpoint with 400 invalid_grant, the metadata server with 404: no service
// account); the store answers every request with `store_status`.
class TokenAndStoreTransport : public HttpTransport {
 public:
  TokenAndStoreTransport(int token_failures, int store_status, bool token_refused = false)
      : token_failures_(token_failures), store_status_(store_status), token_refused_(token_refused) {}

  Result<HttpResponse> Send(const HttpRequest& request, ResponseSink* sink) override {
    HttpResponse response;
    std::string body;
    {
      std::lock_guard lock(mu_);
      if (request.url.find(kTokenHost) != std::string::npos) {
        ++token_requests_;
        if (token_refused_ && request.url.find("/computeMetadata/") != std::string::npos) {
          response.status = 404;  // no service account for this instance or pod
          body = "not found";
        } else if (token_refused_) {
          response.status = 400;
          body = R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})";
        } else if (token_failures_ < 0 || token_requests_ <= token_failures_) {
          response.status = 503;
          body = "busy";
        } else {
          response.status = 200;
          body = R"({"access_token":"ya29.fetched","expires_in":3600,"token_type":"Bearer"})";
        }
      } else {
        ++store_requests_;
        last_authorization_ = request.headers.Get("Authorization").value_or("");
        response.status = store_status_;
        body = store_status_ == 200 ? kObjectJson : R"({"error":{"code":503,"message":"backend unavailable"}})";
      }
    }
    if (!response.ok()) {
      response.error_body = body;
      return response;
    }
    if (sink) {
      SPOOL_RETURN_IF_ERROR(sink->OnHeaders(response.status, response.headers));
      SPOOL_RETURN_IF_ERROR(sink->Write(body));
    }
    response.bytes_received = body.size();
    return response;
  }

  int token_requests() {
    std::lock_guard lock(mu_);
    return token_requests_;
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
  const int token_failures_;
  const int store_status_;
  const bool token_refused_;
  std::mutex mu_;
  int token_requests_ = 0;
  int store_requests_ = 0;
  std::string last_authorization_;
};

// A fresh RSA key in PEM: the token endpoint here does not check signatures.
std::string NewPrivateKeyPem() {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  EVP_PKEY_free(key);
  return pem;
}

enum class TokenSource { kMetadataServer, kServiceAccountKey, kAuthorizedUser };

std::shared_ptr<Credentials> MakeCredentials(TokenSource source, std::shared_ptr<HttpTransport> transport) {
  const std::string token_uri = std::string("http://") + kTokenHost + "/token";
  CredentialsFile file;
  file.token_uri = token_uri;
  switch (source) {
    case TokenSource::kMetadataServer: {
      MetadataServerOptions options;
      options.host = kTokenHost;
      return MakeMetadataServerCredentials(options, std::move(transport));
    }
    case TokenSource::kServiceAccountKey: {
      static const std::string pem = NewPrivateKeyPem();
      file.type = "service_account";
      file.client_email = "spool-test@spool-test.iam.gserviceaccount.com";
      file.private_key = pem;
      auto credentials = MakeServiceAccountCredentials(file, "a test key", std::move(transport));
      EXPECT_TRUE(credentials.ok()) << credentials.status().ToString();
      return credentials.ok() ? *credentials : nullptr;
    }
    case TokenSource::kAuthorizedUser: {
      file.type = "authorized_user";
      file.client_id = "client";
      file.client_secret = "secret";
      file.refresh_token = "1//refresh";
      auto credentials = MakeAuthorizedUserCredentials(file, "a test ADC file", std::move(transport));
      EXPECT_TRUE(credentials.ok()) << credentials.status().ToString();
      return credentials.ok() ? *credentials : nullptr;
    }
  }
  return nullptr;
}

class GcsCredentialedRetryBounds : public ::testing::TestWithParam<TokenSource> {
 protected:
  std::shared_ptr<GcsStore> Open(int token_failures, int store_status, bool token_refused = false) {
    transport_ = std::make_shared<TokenAndStoreTransport>(token_failures, store_status, token_refused);
    GcsStoreOptions options;
    options.bucket = "b";
    options.endpoint = "http://127.0.0.1:9";  // never contacted: the transport answers
    options.transport = transport_;
    options.credentials = MakeCredentials(GetParam(), transport_);
    options.retry.policy.max_attempts = kMaxAttempts;
    options.retry.policy.initial_backoff = std::chrono::seconds(5);
    options.retry.policy.max_backoff = std::chrono::seconds(20);
    options.retry.environment = clock_.Environment();
    auto store = GcsStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? *store : nullptr;
  }

  static int Count(const std::string& text, const std::string& part) {
    int n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  }

  FakeClock clock_;
  std::shared_ptr<TokenAndStoreTransport> transport_;
};

TEST_P(GcsCredentialedRetryBounds, TokenEndpointFailingMakesMaxAttemptsInAllAndSaysSoOnce) {
  auto store = Open(/*token_failures=*/-1, /*store_status=*/503);
  auto stat = store->Stat("k");
  ASSERT_FALSE(stat.ok());
  EXPECT_EQ(stat.status().code(), StatusCode::kUnavailable) << stat.status().ToString();
  EXPECT_EQ(transport_->token_requests(), kMaxAttempts);  // not kMaxAttempts squared
  EXPECT_EQ(transport_->store_requests(), 0);             // no token to send
  const std::string message = stat.status().message();
  EXPECT_EQ(Count(message, "gave up after"), 1) << message;
  EXPECT_NE(message.find("gave up after 3 attempts"), std::string::npos) << message;
  EXPECT_NE(message.find("gs://b/k"), std::string::npos) << message;
}

TEST_P(GcsCredentialedRetryBounds, ATokenFetchedOnceServesEveryAttemptOfAFailingStore) {
  auto store = Open(/*token_failures=*/0, /*store_status=*/503);
  auto stat = store->Stat("k");
  ASSERT_FALSE(stat.ok());
  EXPECT_EQ(stat.status().code(), StatusCode::kUnavailable) << stat.status().ToString();
  EXPECT_EQ(transport_->token_requests(), 1);
  EXPECT_EQ(transport_->store_requests(), kMaxAttempts);
  EXPECT_EQ(Count(stat.status().message(), "gave up after"), 1) << stat.status().ToString();
}

TEST_P(GcsCredentialedRetryBounds, ATransientTokenFailureIsRetriedByTheRequestsLoop) {
  auto store = Open(/*token_failures=*/1, /*store_status=*/200);
  auto stat = store->Stat("k");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(transport_->token_requests(), 2);
  EXPECT_EQ(transport_->store_requests(), 1);
  EXPECT_EQ(transport_->last_authorization(), "Bearer ya29.fetched");
  ASSERT_TRUE(store->Stat("k").ok());
  EXPECT_EQ(transport_->token_requests(), 2);  // cached
}

TEST_P(GcsCredentialedRetryBounds, AnUnconditionalWriteFetchesItsTokenUnderThePolicyThenSendsOnce) {
  auto store = Open(/*token_failures=*/2, /*store_status=*/200);
  auto writer = store->OpenWrite("k");
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append("small").ok());
  auto closed = (*writer)->Close();
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_EQ(transport_->token_requests(), 3);
  EXPECT_EQ(transport_->store_requests(), 1);
}

TEST_P(GcsCredentialedRetryBounds, ARefusedTokenIsUnauthenticatedAtOnce) {
  auto store = Open(/*token_failures=*/0, /*store_status=*/200, /*token_refused=*/true);
  auto stat = store->Stat("k");
  EXPECT_EQ(stat.status().code(), StatusCode::kUnauthenticated) << stat.status().ToString();
  EXPECT_EQ(transport_->token_requests(), 1);
  EXPECT_EQ(transport_->store_requests(), 0);
}

INSTANTIATE_TEST_SUITE_P(Sources, GcsCredentialedRetryBounds,
                         ::testing::Values(TokenSource::kMetadataServer, TokenSource::kServiceAccountKey,
                                           TokenSource::kAuthorizedUser),
                         [](const ::testing::TestParamInfo<TokenSource>& info) {
                           switch (info.param) {
                             case TokenSource::kMetadataServer:
                               return "MetadataServer";
                             case TokenSource::kServiceAccountKey:
                               return "ServiceAccountKey";
                             case TokenSource::kAuthorizedUser:
                               return "AuthorizedUser";
                           }
                           return "Unknown";
                         });

}  // namespace
}  // namespace spool::gcs
