#include "spool/core/retry.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/fake_retry_clock.h"

namespace spool {
namespace {

using std::chrono::milliseconds;

using FakeTime = test_support::FakeRetryClock;

RetryPolicy Policy(int max_attempts) {
  RetryPolicy policy;
  policy.max_attempts = max_attempts;
  policy.initial_backoff = milliseconds(100);
  policy.max_backoff = milliseconds(1000);
  policy.max_elapsed = milliseconds(60'000);
  return policy;
}

TEST(RetryTest, SucceedsFirstTime) {
  FakeTime time;
  int calls = 0;
  Status status = Retry(Policy(5), Idempotency::kIdempotent, "GET x", [&] {
    ++calls;
    return OkStatus();
  }, time.Environment());
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(time.sleeps.empty());
}

TEST(RetryTest, RetriesTransientFailuresUntilSuccess) {
  FakeTime time;
  int calls = 0;
  Status status = Retry(Policy(5), Idempotency::kIdempotent, "GET x", [&] {
    return ++calls < 3 ? UnavailableError("503") : OkStatus();
  }, time.Environment());
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(time.retried_attempts, (std::vector<int>{1, 2}));
  // u = 0.5: half of 100 ms, then half of 200 ms.
  EXPECT_EQ(time.sleeps, (std::vector<milliseconds>{milliseconds(50), milliseconds(100)}));
}

TEST(RetryTest, GivesUpAfterMaxAttemptsKeepingTheLastError) {
  FakeTime time;
  int calls = 0;
  Status status = Retry(Policy(4), Idempotency::kIdempotent, "GET s3://b/k", [&] {
    ++calls;
    return DeadlineExceededError(std::string("stalled at byte ").append(std::to_string(calls)))
        .WithRemote({.http_status = 0, .service_code = "", .request_id = std::string("r").append(std::to_string(calls))});
  }, time.Environment());
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(time.sleeps.size(), 3u);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.remote().request_id, "r4");
  EXPECT_EQ(status.message().rfind("GET s3://b/k: gave up after 4 attempts in ", 0), 0u) << status.message();
  EXPECT_NE(status.message().find("stalled at byte 4"), std::string::npos);
}

TEST(RetryTest, NonRetryableReturnsAtOnce) {
  for (Status error : {NotFoundError("no such key"), PermissionDeniedError("denied"),
                       InvalidArgumentError("bad"), DataLossError("crc"), FailedPreconditionError("412")}) {
    FakeTime time;
    int calls = 0;
    Status status = Retry(Policy(8), Idempotency::kIdempotent, "GET x", [&] {
      ++calls;
      return error;
    }, time.Environment());
    EXPECT_EQ(calls, 1) << error.ToString();
    EXPECT_EQ(status, error);
    EXPECT_TRUE(time.sleeps.empty());
  }
}

TEST(RetryTest, NonIdempotentIsTriedOnce) {
  FakeTime time;
  int calls = 0;
  Status status = Retry(Policy(8), Idempotency::kNonIdempotent, "POST x", [&] {
    ++calls;
    return UnavailableError("connection reset");
  }, time.Environment());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(time.sleeps.empty());
}

TEST(RetryTest, MaxElapsedStopsNewAttempts) {
  FakeTime time;
  time.uniform01 = 0.999;  // nearly the whole ceiling each time: 99, 199, 399, 799, 999...
  RetryPolicy policy = Policy(100);
  policy.max_elapsed = milliseconds(2500);
  int calls = 0;
  Status status = Retry(policy, Idempotency::kIdempotent, "GET x", [&] {
    ++calls;
    time.now += milliseconds(10);  // each attempt takes a little time
    return UnavailableError("503");
  }, time.Environment());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_LT(calls, 100);
  // No attempt started after the limit.
  milliseconds slept{0};
  for (milliseconds d : time.sleeps) slept += d;
  EXPECT_LE(slept + milliseconds(10) * (calls - 1), policy.max_elapsed);
  // And the loop did not stop early: one more sleep would have crossed it.
  EXPECT_GT(slept + milliseconds(10) * calls + milliseconds(999), policy.max_elapsed);
  EXPECT_NE(status.message().find(std::string("gave up after ").append(std::to_string(calls)).append(" attempts")), std::string::npos);
}

TEST(RetryTest, ResultValuesPassThrough) {
  FakeTime time;
  int calls = 0;
  Result<int> result = Retry(Policy(5), Idempotency::kIdempotent, "GET x", [&]() -> Result<int> {
    if (++calls < 2) return UnavailableError("503");
    return 7;
  }, time.Environment());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, 7);
  EXPECT_EQ(calls, 2);

  Result<int> failed = Retry(Policy(5), Idempotency::kIdempotent, "GET x",
                             []() -> Result<int> { return NotFoundError("gone"); }, time.Environment());
  EXPECT_EQ(failed.status().code(), StatusCode::kNotFound);
}

TEST(RetryTest, EmptyEnvironmentFunctionsFallBackToDefaults) {
  // Only the sleep is injected; the clock and jitter are the real ones.
  std::vector<milliseconds> sleeps;
  RetryEnvironment env;
  env.sleep = [&](milliseconds d) { sleeps.push_back(d); };
  int calls = 0;
  Status status = Retry(Policy(3), Idempotency::kIdempotent, "GET x", [&] {
    ++calls;
    return UnavailableError("503");
  }, env);
  EXPECT_EQ(calls, 3);
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_LE(sleeps[0], milliseconds(100));
  EXPECT_LE(sleeps[1], milliseconds(200));
}

TEST(RetryTest, IsRetryable) {
  EXPECT_TRUE(IsRetryable(UnavailableError("x")));
  EXPECT_TRUE(IsRetryable(DeadlineExceededError("x")));
  EXPECT_FALSE(IsRetryable(OkStatus()));
  EXPECT_FALSE(IsRetryable(NotFoundError("x")));
  EXPECT_FALSE(IsRetryable(InternalError("x")));
  EXPECT_FALSE(IsRetryable(CancelledError("x")));
}

TEST(BackoffDelayTest, FullJitterWithinTruncatedExponentialCeiling) {
  RetryPolicy policy = Policy(10);  // 100 ms initial, 1000 ms max
  const milliseconds ceilings[] = {milliseconds(100), milliseconds(200), milliseconds(400), milliseconds(800),
                                   milliseconds(1000), milliseconds(1000)};
  for (int failed = 1; failed <= 6; ++failed) {
    milliseconds ceiling = ceilings[failed - 1];
    EXPECT_EQ(BackoffDelay(policy, failed, 0.0), milliseconds(0));
    EXPECT_EQ(BackoffDelay(policy, failed, 0.5), ceiling / 2);
    for (double u = 0.0; u < 1.0; u += 0.0625) {
      milliseconds d = BackoffDelay(policy, failed, u);
      EXPECT_GE(d, milliseconds(0));
      EXPECT_LT(d, ceiling);
    }
    EXPECT_LE(BackoffDelay(policy, failed, 0.9999999), ceiling);
  }
  // Huge attempt counts do not overflow.
  EXPECT_LE(BackoffDelay(policy, 1'000'000, 0.99), milliseconds(1000));
}

TEST(BackoffDelayTest, DefaultJitterIsUniformInRange) {
  const RetryEnvironment& env = RetryEnvironment::Default();
  double low = 1, high = 0;
  for (int i = 0; i < 10'000; ++i) {
    double u = env.uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    low = std::min(low, u);
    high = std::max(high, u);
  }
  EXPECT_LT(low, 0.01);
  EXPECT_GT(high, 0.99);
}

}  // namespace
}  // namespace spool
