// Every GcsStore operation against a service that always answers 503 makes
// at most policy.max_attempts attempts per HTTP exchange, and exactly as
// many as the design says: reads and preconditioned writes are retried, an
// unconditional insert or delete is tried once and then reconciled with a
// read. The backoff runs on a fake clock, so the test takes no real time.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "spool/core/http/transport.h"
#include "spool/core/retry.h"
#include "spool/gcs/credentials.h"
#include "spool/gcs/gcs_store.h"

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
struct FakeClock {
  std::mutex mu;
  std::chrono::steady_clock::time_point now{};
  std::chrono::milliseconds slept{0};
  int retries = 0;

  RetryEnvironment Environment() {
    RetryEnvironment env;
    env.now = [this] {
      std::lock_guard lock(mu);
      return now;
    };
    env.sleep = [this](std::chrono::milliseconds delay) {
      std::lock_guard lock(mu);
      now += delay;
      slept += delay;
    };
    env.uniform01 = [] { return 0.5; };
    env.on_retry = [this](const Status&, int, std::chrono::milliseconds) {
      std::lock_guard lock(mu);
      ++retries;
    };
    return env;
  }
};

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
  EXPECT_EQ(clock_.retries, kMaxAttempts - 1);
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

}  // namespace
}  // namespace spool::gcs
