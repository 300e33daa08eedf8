// The retry quota, the adaptive concurrency limit and Retry-After
// (core/throttle.h), on a fake clock: no network. The pacing test uses the
// real clock with margins of over a second: it checks which rate a send follows.
#include "spool/core/throttle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "spool/core/env.h"
#include "spool/core/pacing_block.h"
#include "tests/support/fake_retry_clock.h"
#include "tests/support/temp_dir.h"

namespace spool {
namespace {

using std::chrono::milliseconds;

using FakeTime = test_support::FakeRetryClock;

RetryPolicy Policy(int max_attempts) {
  RetryPolicy policy;
  policy.max_attempts = max_attempts;
  policy.initial_backoff = milliseconds(100);
  policy.max_backoff = milliseconds(5000);
  policy.max_elapsed = milliseconds(1'000'000);
  return policy;
}

Status SlowDown() { return UnavailableError("503 SlowDown").WithRemote(RemoteError{503, "SlowDown", ""}); }

// An attempt that always fails with `failure`, counting its calls.
std::function<Status()> AlwaysFails(int& calls, Status failure) {
  return [&calls, failure] {
    ++calls;
    return failure;
  };
}

TEST(RetryThrottleTest, QuotaPaysRetriesAndSuccessesRefill) {
  RetryThrottle throttle("s3://quota");
  FakeTime time;
  int calls = 0;
  // Two retries (5 tokens each), then success: the last retry's 5 come back.
  Status status = RetryThrottled(
      Policy(8), Idempotency::kIdempotent, "GET x", [&] { return ++calls < 3 ? SlowDown() : OkStatus(); },
      time.Environment(), &throttle);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(throttle.state().quota_tokens, RetryThrottle::kQuotaCapacity - 5);
  EXPECT_EQ(throttle.state().throttled, 2u);
  // A first-time success refunds 1.
  ASSERT_TRUE(
      RetryThrottled(
          Policy(8), Idempotency::kIdempotent, "GET y", [] { return OkStatus(); }, time.Environment(), &throttle)
          .ok());
  EXPECT_EQ(throttle.state().quota_tokens, RetryThrottle::kQuotaCapacity - 4);
}

TEST(RetryThrottleTest, TimeoutsCostMore) {
  RetryThrottle throttle("s3://timeouts");
  int cost = 0;
  ASSERT_TRUE(throttle.SpendRetry(DeadlineExceededError("stalled"), &cost));
  EXPECT_EQ(cost, RetryThrottle::kTimeoutRetryCost);
  ASSERT_TRUE(throttle.SpendRetry(UnavailableError("reset"), &cost));
  EXPECT_EQ(cost, RetryThrottle::kRetryCost);
  EXPECT_EQ(throttle.state().quota_tokens, RetryThrottle::kQuotaCapacity - 15);
}

TEST(RetryThrottleTest, EmptyQuotaFailsAtOnceNamingIt) {
  RetryThrottle throttle("s3://empty");
  int cost = 0;
  while (throttle.SpendRetry(UnavailableError("x"), &cost)) {
  }
  EXPECT_LT(throttle.state().quota_tokens, RetryThrottle::kRetryCost);
  FakeTime time;
  int calls = 0;
  Status status = RetryThrottled(Policy(8), Idempotency::kIdempotent, "GET s3://empty/k",
                                 AlwaysFails(calls, SlowDown()), time.Environment(), &throttle);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(time.sleeps.empty());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("GET s3://empty/k"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("retry quota of s3://empty is empty"), std::string::npos) << status.message();
  EXPECT_EQ(status.remote().service_code, "SlowDown");
  EXPECT_EQ(throttle.state().quota_refusals, 2u);  // the drain loop's last try, then the request
}

TEST(RetryThrottleTest, ThrottledAnswersAreBoundedByTimeAndQuotaNotTheAttemptCount) {
  // max_attempts 2 throughout, so that few attempts show it. (Few, because
  // the throttle paces on the real clock once the store has throttled.)
  // 4 throttled answers, then success: the request succeeds, paying the
  // quota for every retry.
  RetryThrottle throttle("s3://patient");
  FakeTime time;
  int calls = 0;
  Status status = RetryThrottled(
      Policy(2), Idempotency::kIdempotent, "PUT x", [&] { return ++calls <= 4 ? SlowDown() : OkStatus(); },
      time.Environment(), &throttle);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(throttle.state().throttled, 4u);
  EXPECT_EQ(throttle.state().quota_tokens, RetryThrottle::kQuotaCapacity - 3 * RetryThrottle::kRetryCost);
  // Other failures still count: connection resets give up after 2.
  calls = 0;
  status = RetryThrottled(Policy(2), Idempotency::kIdempotent, "PUT y",
                          AlwaysFails(calls, UnavailableError("connection reset")), time.Environment(), &throttle);
  EXPECT_EQ(calls, 2);
  EXPECT_NE(status.message().find("gave up after 2 attempts"), std::string::npos) << status.message();
  // Throttled for ever: the quota ends it (drained first to 3 retries' worth).
  RetryThrottle refusing("s3://refusing");
  int cost = 0;
  while (refusing.state().quota_tokens > 3 * RetryThrottle::kRetryCost) refusing.SpendRetry(SlowDown(), &cost);
  calls = 0;
  status = RetryThrottled(Policy(2), Idempotency::kIdempotent, "PUT z", AlwaysFails(calls, SlowDown()),
                          time.Environment(), &refusing);
  EXPECT_EQ(calls, 4);
  EXPECT_NE(status.message().find("retry quota of s3://refusing is empty"), std::string::npos) << status.message();
  // Without a throttle (plain Retry) a throttled answer counts as before.
  calls = 0;
  status = Retry(Policy(2), Idempotency::kIdempotent, "PUT w", AlwaysFails(calls, SlowDown()), time.Environment());
  EXPECT_EQ(calls, 2);
}

TEST(RetryThrottleTest, ThrottlingCutsTheLimitAndSuccessGrowsItBack) {
  RetryThrottle throttle("s3://aimd");
  // 8 in flight when the service throttles: the limit becomes 4.
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(throttle.Acquire().ok());
  throttle.Record(SlowDown());
  EXPECT_EQ(throttle.state().concurrency_limit, 4);
  // A second throttle of the same burst does not cut again.
  throttle.Record(SlowDown());
  EXPECT_EQ(throttle.state().concurrency_limit, 4);
  for (int i = 0; i < 8; ++i) throttle.Release();
  EXPECT_EQ(throttle.state().in_flight, 0);
  // 4 successes in a row grow it by one.
  for (int i = 0; i < 4; ++i) throttle.Record(OkStatus());
  EXPECT_EQ(throttle.state().concurrency_limit, 5);
  // Non-throttle failures leave it alone.
  throttle.Record(UnavailableError("connection reset"));
  EXPECT_EQ(throttle.state().concurrency_limit, 5);
}

TEST(RetryThrottleTest, RateGrowsBackAsACubic) {
  using T = RetryThrottle;
  const double k = T::kRecoverSeconds;
  // kRateCut of W_max right after the cut, W_max after kRecoverSeconds.
  EXPECT_DOUBLE_EQ(T::CubicRate(100, 0), 100 * T::kRateCut);
  EXPECT_DOUBLE_EQ(T::CubicRate(100, k), 100);
  // Concave below W_max: most of the way back in half the time.
  EXPECT_DOUBLE_EQ(T::CubicRate(100, k / 2), 100 * (1 - (1 - T::kRateCut) / 8));
  // Convex beyond it: slow at first, then faster.
  EXPECT_DOUBLE_EQ(T::CubicRate(100, 1.5 * k), 100 * (1 + T::kProbeGrowth / 8));
  EXPECT_DOUBLE_EQ(T::CubicRate(100, 2 * k), 100 * (1 + T::kProbeGrowth));
  EXPECT_GT(T::kProbeGrowth, 1 - T::kRateCut);  // probing beyond W_max is faster than the return to it
  // Never decreasing, the same shape whatever the rate, and bounded.
  double last = 0;
  for (double t = 0; t < 10 * k; t += 0.1) {
    const double rate = T::CubicRate(60, t);
    EXPECT_GE(rate, last) << t;
    EXPECT_DOUBLE_EQ(T::CubicRate(6, t) * 10, rate) << t;
    last = rate;
  }
  EXPECT_EQ(T::CubicRate(1000, 1e9), T::kMaxRate);
}

TEST(RetryThrottleTest, AnEarlyThrottleEstimatesTheRateFromWhatWasSent) {
  RetryThrottle throttle("s3://early");
  // 16 sent and throttled at once, before a tenth of a second of sending:
  // the rate is estimated over that tenth (160/s, cut to 128/s), not taken
  // as nothing (the floor kMinRate). Only a stall of over 12 s between the
  // sends and the throttle could bring it down to 1/s.
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(throttle.Acquire().ok());
  throttle.Record(SlowDown());
  EXPECT_GT(throttle.state().rate_limit, 1.0);
  // Successes do not lower it.
  const double cut = throttle.state().rate_limit;
  throttle.Record(OkStatus());
  EXPECT_GE(throttle.state().rate_limit, cut);
  for (int i = 0; i < 16; ++i) throttle.Release();
}

TEST(RetryThrottleTest, ACutWhenMostSendsWereThrottledStartsFromHalfTheRate) {
  // 20 sends within a tenth of a second (measured: 200/s), then the first
  // throttle, after `succeeded` of them got through.
  auto cut_after = [](int succeeded) {
    RetryThrottle throttle("s3://cut");
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(throttle.Acquire().ok());
    for (int i = 0; i < succeeded; ++i) throttle.Record(OkStatus());
    throttle.Record(SlowDown());
    for (int i = 0; i < 20; ++i) throttle.Release();
    return throttle.state().rate_limit;
  };
  const double mostly_admitted = cut_after(19);
  EXPECT_DOUBLE_EQ(cut_after(10), mostly_admitted);  // half got through: the usual cut
  // Mostly throttled, as at a job's start: from half the rate sent.
  const double mostly_throttled = cut_after(9);
  EXPECT_DOUBLE_EQ(mostly_throttled, mostly_admitted / 2);
  EXPECT_DOUBLE_EQ(cut_after(0), mostly_throttled);
}

TEST(RetryThrottleTest, SendsAlreadyWaitingGoAtTheRateAsItGrows) {
  // On the real clock, with margins of over a second: what is checked is
  // which rate a waiting send follows, not how fast anything runs.
  using Clock = std::chrono::steady_clock;
  RetryThrottle throttle("s3://paced");
  // Two sends 2 s apart, then 8 at once and a throttle: measured 1/s, cut
  // to a rate of 0.8/s (a send every 1.25 s) and a limit of 4.
  ASSERT_TRUE(throttle.Acquire().ok());
  throttle.Release();
  std::this_thread::sleep_for(milliseconds(2000));
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(throttle.Acquire().ok());
  throttle.Record(SlowDown());
  for (int i = 0; i < 8; ++i) throttle.Release();
  const double cut = throttle.state().rate_limit;
  ASSERT_LT(cut, 1.0);
  ASSERT_EQ(throttle.state().concurrency_limit, 4);
  // 7 s on, the cubic allows 4/s, but only a success raises the rate.
  std::this_thread::sleep_for(milliseconds(7000));
  ASSERT_TRUE(throttle.Acquire().ok());
  std::vector<std::thread> waiting;
  std::atomic<int> sent{0};
  for (int i = 0; i < 3; ++i) {
    waiting.emplace_back([&] {
      ASSERT_TRUE(throttle.Acquire().ok());
      ++sent;
      throttle.Record(OkStatus());
      throttle.Release();
    });
  }
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(sent.load(), 0) << "paced at " << cut << "/s: none is due before 1.25 s";
  const auto grown_at = Clock::now();
  throttle.Record(OkStatus());
  throttle.Release();
  EXPECT_GT(throttle.state().rate_limit, 3.0);
  for (auto& thread : waiting) thread.join();
  // At the rate they waited at, the last of the 3 would go 3.75 s after the
  // first send; at the grown rate, within 0.75 s.
  EXPECT_LT(Clock::now() - grown_at, milliseconds(2000));
  EXPECT_EQ(throttle.state().in_flight, 0);
}

TEST(RetryThrottleTest, NeverMoreInFlightThanTheLimit) {
  RetryThrottle throttle("s3://limit");
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(throttle.Acquire().ok());
  throttle.Record(SlowDown());  // limit 1, 2 in flight
  ASSERT_EQ(throttle.state().concurrency_limit, 1);
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    ASSERT_TRUE(throttle.Acquire().ok());
    acquired = true;
    throttle.Release();
  });
  throttle.Release();
  // One still in flight: at the limit, so the waiter waits until it ends.
  EXPECT_FALSE(acquired.load());
  throttle.Release();
  waiter.join();
  EXPECT_TRUE(acquired.load());
  EXPECT_EQ(throttle.state().in_flight, 0);
}

TEST(RetryThrottleTest, RetryAfterIsHonoured) {
  RetryThrottle throttle("s3://retry-after");
  FakeTime time;
  int calls = 0;
  Status status = RetryThrottled(
      Policy(8), Idempotency::kIdempotent, "GET x",
      [&] {
        if (++calls == 1) {
          NoteRetryAfter(ParseRetryAfter("3"));
          return SlowDown();
        }
        return OkStatus();
      },
      time.Environment(), &throttle);
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(time.sleeps.size(), 1u);
  EXPECT_EQ(time.sleeps[0], milliseconds(3000));  // not the 50 ms of the jittered backoff
}

TEST(RetryThrottleTest, ParsesRetryAfter) {
  EXPECT_EQ(ParseRetryAfter("120"), milliseconds(120'000));
  EXPECT_EQ(ParseRetryAfter(" 0 "), milliseconds(0));
  EXPECT_EQ(ParseRetryAfter(""), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("-5"), std::nullopt);
}

TEST(RetryThrottleTest, OneThrottlePerStoreInTheProcess) {
  ScopedEnvOverride process_scope(Env::Fixed({{"SPOOL_THROTTLE_SCOPE", "process"}}));
  auto a = RetryThrottle::ForStore("s3://shared-bucket", "http://127.0.0.1:1");
  auto b = RetryThrottle::ForStore("s3://shared-bucket", "http://127.0.0.1:2");
  auto c = RetryThrottle::ForStore("s3://other-bucket", "http://127.0.0.1:1");
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  int seen = 0;
  RetryThrottle::ForEach([&](const RetryThrottle& t) { seen += t.store() == "s3://shared-bucket"; });
  EXPECT_EQ(seen, 1);
  EXPECT_FALSE(a->paced_with_host());
}

// By default a store's throttle paces with the host's other processes, in
// a file of /dev/shm that goes with its last user.
TEST(RetryThrottleTest, AStoresThrottleIsPacedWithTheHostByDefault) {
  const std::string store = "s3://host-default-" + std::to_string(getpid());
  const std::string endpoint = "http://127.0.0.1:7";
  const std::string file = PacingBlock::PathFor(RetryThrottle::HostPacingKey(store, endpoint), PacingBlock::kHostDir);
  {
    auto throttle = RetryThrottle::ForStore(store, endpoint);
    EXPECT_TRUE(throttle->paced_with_host());
    EXPECT_TRUE(std::filesystem::exists(file)) << file;
    // An unknown scope is ignored (with a line at SPOOL_LOG=info): the host's.
    ScopedEnvOverride unknown(Env::Fixed({{"SPOOL_THROTTLE_SCOPE", "node"}}));
    EXPECT_TRUE(RetryThrottle::ForStore(store + "-b", endpoint)->paced_with_host());
  }
  EXPECT_FALSE(std::filesystem::exists(file)) << file;
}

// After an idle spell the rate is measured afresh: 16 quick sends then a
// throttle estimate 160/s from them, not a rate from the window before the
// spell (1 send in 4 s, which would cut to the floor).
TEST(RetryThrottleTest, AfterAnIdleSpellTheRateIsMeasuredAfresh) {
  RetryThrottle throttle("s3://idle");
  ASSERT_TRUE(throttle.Acquire().ok());
  throttle.Release();
  std::this_thread::sleep_for(std::chrono::duration<double>(2 / RetryThrottle::kMinRate + 0.1));
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(throttle.Acquire().ok());
  throttle.Record(SlowDown());
  EXPECT_GT(throttle.state().rate_limit, 10.0);
  for (int i = 0; i < 16; ++i) throttle.Release();
}

// Two throttles of the host's block for one store: what one is told, the
// other paces by. In one process here; across processes below.
TEST(RetryThrottleTest, ThrottlesOfOneHostBlockPaceAsOne) {
  test_support::TempDir dir;
  auto block = [&] {
    std::string why_not;
    auto made = PacingBlock::OnHost("s3://b http://127.0.0.1:9", dir.path().string(), &why_not);
    EXPECT_NE(made, nullptr) << why_not;
    return made;
  };
  RetryThrottle first("s3://b", block());
  RetryThrottle second("s3://b", block());
  EXPECT_TRUE(first.paced_with_host());
  EXPECT_EQ(second.state().rate_limit, 0);
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(first.Acquire().ok());
  first.Record(SlowDown());
  const double cut = first.state().rate_limit;
  EXPECT_GT(cut, 0);
  EXPECT_EQ(second.state().rate_limit, cut);
  // A second throttle within kCutInterval, seen by the other throttle,
  // does not cut the shared rate again: one burst, one cut for the host.
  ASSERT_TRUE(second.Acquire().ok());
  second.Record(SlowDown());
  EXPECT_EQ(first.state().rate_limit, cut);
  // The concurrency limit stays each process's own: only `first` had 16 in flight.
  EXPECT_EQ(first.state().concurrency_limit, 8);
  EXPECT_EQ(second.state().concurrency_limit, 1);
  second.Release();
  for (int i = 0; i < 16; ++i) first.Release();
}

TEST(RetryThrottleTest, AThrottleInAnotherProcessPacesThisOne) {
  test_support::TempDir dir;
  const std::string key = "s3://b http://127.0.0.1:9";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string why_not;
    RetryThrottle throttled("s3://b", PacingBlock::OnHost(key, dir.path().string(), &why_not));
    for (int i = 0; i < 16; ++i) (void)throttled.Acquire();
    throttled.Record(SlowDown());
    _exit(throttled.paced_with_host() && throttled.state().rate_limit > 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::string why_not;
  RetryThrottle later("s3://b", PacingBlock::OnHost(key, dir.path().string(), &why_not));
  ASSERT_TRUE(later.paced_with_host()) << why_not;
  EXPECT_GT(later.state().rate_limit, 0);
  // Another store's block is its own.
  RetryThrottle other("s3://c", PacingBlock::OnHost("s3://c http://127.0.0.1:9", dir.path().string(), &why_not));
  EXPECT_EQ(other.state().rate_limit, 0);
}

}  // namespace
}  // namespace spool
