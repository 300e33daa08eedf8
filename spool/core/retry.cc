#include "spool/core/retry.h"

#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "spool/core/cancel.h"
#include "spool/core/log.h"
#include "spool/core/throttle.h"

namespace spool {
namespace {

double ThreadLocalUniform01() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return static_cast<double>(engine() >> 11) * 0x1.0p-53;  // 53 random bits in [0, 1)
}

// `env` with every function it leaves empty taken from the default, so tests
// can inject only what they control.
RetryEnvironment Complete(const RetryEnvironment& env) {
  const RetryEnvironment& fallback = RetryEnvironment::Default();
  RetryEnvironment out = env;
  if (!out.now) out.now = fallback.now;
  if (!out.sleep) out.sleep = fallback.sleep;
  if (!out.uniform01) out.uniform01 = fallback.uniform01;
  return out;
}

std::string Seconds(std::chrono::steady_clock::duration d) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f s", std::chrono::duration<double>(d).count());
  return buffer;
}

Status GaveUp(std::string_view what, int attempts, std::chrono::steady_clock::duration elapsed,
              const Status& last) {
  std::string message;
  if (!what.empty()) message = std::string(what) + ": ";
  message += "gave up after " + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") + " in " +
             Seconds(elapsed) + ": " + last.message();
  return Status(last.code(), std::move(message)).WithRemote(last.remote());
}

// The retry quota could not pay for another attempt: fail now, naming the
// quota, rather than add to the load of a failing service.
Status QuotaEmpty(std::string_view what, int attempts, const RetryThrottle& throttle, const Status& last) {
  std::string message;
  if (!what.empty()) message = std::string(what) + ": ";
  message += "not retried after " + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") +
             ": the retry quota of " + throttle.store() + " is empty (" +
             std::to_string(RetryThrottle::kQuotaCapacity) +
             " tokens, refilled by successful requests; too many requests failed recently, the service is "
             "throttling or failing): " +
             last.message();
  return Status(StatusCode::kUnavailable, std::move(message)).WithRemote(last.remote());
}

}  // namespace

const RetryEnvironment& RetryEnvironment::Default() {
  static const RetryEnvironment env{
      .now = [] { return std::chrono::steady_clock::now(); },
      // A cancel ends the backoff early; the loop then sees it and stops.
      .sleep = [](std::chrono::milliseconds d) { CancelToken::Current().SleepFor(d); },
      .uniform01 = &ThreadLocalUniform01,
      .on_retry = nullptr,
  };
  return env;
}

bool IsRetryable(const Status& status) {
  return status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded;
}

std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int failed_attempts, double u) {
  // The ceiling doubles with each failure, starting at initial_backoff.
  using std::chrono::milliseconds;
  milliseconds ceiling = policy.initial_backoff;
  for (int i = 1; i < failed_attempts && ceiling < policy.max_backoff; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, policy.max_backoff);
  if (ceiling <= milliseconds::zero()) return milliseconds::zero();
  u = std::clamp(u, 0.0, 1.0);
  auto delay = milliseconds(static_cast<int64_t>(u * static_cast<double>(ceiling.count())));
  return std::min(delay, ceiling);
}

bool IsRateLimited(const Status& status) {
  const RemoteError& remote = status.remote();
  return remote.http_status == 429 || remote.service_code == "SlowDown" || remote.service_code == "TooManyRequests" ||
         remote.service_code == "rateLimitExceeded";
}

bool IsThrottle(const Status& status) { return IsRateLimited(status) || status.remote().http_status == 503; }

namespace retry_internal {

Status RunLoop(const RetryPolicy& policy, Idempotency idempotency, std::string_view what, const RetryEnvironment& env,
               const std::function<Status()>& attempt) {
  return RunThrottledLoop(policy, idempotency, what, env, nullptr, attempt);
}

Status RunThrottledLoop(const RetryPolicy& policy, Idempotency idempotency, std::string_view what,
                        const RetryEnvironment& given_env, RetryThrottle* throttle,
                        const std::function<Status()>& attempt) {
  const RetryEnvironment env = Complete(given_env);
  const auto start = env.now();
  const CancelToken cancel = CancelToken::Current();
  int last_retry_cost = 0;
  // Attempts that count against max_attempts: with a store's throttle, a
  // throttled answer does not (retry.h), so only the others are counted.
  int counted = 0;
  for (int attempts = 1;; ++attempts) {
    // The slot is held from the attempt through its backoff sleep (throttle.h).
    if (throttle != nullptr) SPOOL_RETURN_IF_ERROR(throttle->Acquire());
    struct SlotGuard {
      RetryThrottle* throttle;
      ~SlotGuard() {
        if (throttle != nullptr) throttle->Release();
      }
    } slot{throttle};
    NoteRetryAfter(std::nullopt);
    Status status = attempt();
    const std::optional<std::chrono::milliseconds> retry_after = TakeRetryAfter();
    if (throttle != nullptr) throttle->Record(status);
    if (status.ok()) {
      if (throttle != nullptr) throttle->Refund(last_retry_cost);
      return status;
    }
    if (!IsRetryable(status) || idempotency == Idempotency::kNonIdempotent) return status;
    // The owner of this work gave up on it: no further attempt.
    if (cancel.cancelled()) return status;
    const auto elapsed = env.now() - start;
    if (throttle == nullptr || !IsRateLimited(status)) ++counted;
    if (counted >= policy.max_attempts) return GaveUp(what, attempts, elapsed, status);
    std::chrono::milliseconds delay = BackoffDelay(policy, attempts, env.uniform01());
    // The service said when to come back: not sooner (within max_backoff).
    if (retry_after) delay = std::max(delay, std::min(*retry_after, policy.max_backoff));
    // No new attempt may start after max_elapsed: give up now rather than
    // sleep past it.
    if (elapsed + delay > policy.max_elapsed) return GaveUp(what, attempts, elapsed, status);
    if (throttle != nullptr && !throttle->SpendRetry(status, &last_retry_cost)) {
      return QuotaEmpty(what, attempts, *throttle, status);
    }
    if (log::DebugEnabled()) {
      log::Debug("retry", std::string(what) + ": attempt " + std::to_string(attempts) + " failed (" +
                              status.ToString() + "); retrying in " + std::to_string(delay.count()) + " ms");
    }
    if (env.on_retry) env.on_retry(status, attempts, delay);
    env.sleep(delay);
  }
}

}  // namespace retry_internal
}  // namespace spool
