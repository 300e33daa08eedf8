// The one retry loop of spool, used around a single HTTP exchange (one part,
// one range, one list page), never around a whole multi-step operation.
//
// Retryable: Unavailable (connection errors, 5xx, 408, 429, S3 SlowDown: the
// protocol layers map those to Unavailable and keep the HTTP status) and
// DeadlineExceeded (timeouts, stalls). Everything else returns at once. A
// non-idempotent attempt is tried only once unless the caller made it safe
// (a precondition, the resumable protocol) and says so.
//
// Backoff is truncated exponential with full jitter: after the n-th failed
// attempt (n = 1, 2, ...) it sleeps
// uniform(0, min(max_backoff, initial_backoff * 2^(n-1))). An attempt that
// could only start after max_elapsed is not made. With a store's
// RetryThrottle (RetryThrottled, core/throttle.h), a rate-limited answer
// (429, SlowDown; IsRateLimited) does not use up one of max_attempts: it is the service
// pacing its clients, not a fault, and the throttle already slows the
// process down on it, so such retries are bounded by max_elapsed and by the
// throttle's retry quota instead (as Google's client libraries retry 429
// until a deadline). Under a throttled prefix shared by many processes a
// request at its fair share is still refused often (at 16 processes and
// a full token bucket, 8 refusals in a row came once in a few hundred
// requests), which a count of 8 turned into a failed job. No attempt follows once
// the current CancelToken (core/cancel.h) is cancelled, and the default
// sleep wakes up early on a cancel. Clock, sleep and
// randomness are injectable so tests run instantly. Thread-safe: a RetryPolicy
// is a value and RetryContext functions may be called from any thread.
//
// Credentials: a credential or token fetch (S3 STS, container and instance
// metadata credentials; GCS metadata server and OAuth token endpoint) is part
// of the attempt that needs it and makes ONE request per call, never a loop
// of its own. A fetch that fails transiently answers Unavailable or
// DeadlineExceeded, so the caller's loop retries the whole attempt, and the
// fetched credentials are cached (they are not fetched again by the next
// attempt once one fetch succeeded). So with max_attempts = N (and no rate-limited answer) a request sends
// at most N credential requests and N requests to the store, and the final
// error says "gave up after N attempts" once. Missing, rejected or expired
// credentials are Unauthenticated (or PermissionDenied when the service
// refuses the operation to credentials it accepted), never NotFound, and are
// not retried. A non-idempotent exchange, tried once, fetches its token
// first under the same policy as an idempotent exchange: nothing has been
// sent while the token is missing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>

#include "spool/core/status.h"

namespace spool {

struct RetryPolicy {
  int max_attempts = 8;  // including the first
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{10'000};
  std::chrono::milliseconds max_elapsed{180'000};  // no new attempt after this
};

enum class Idempotency { kIdempotent, kNonIdempotent };

// What the loop uses to tell time, wait and draw jitter. Defaults are the
// steady clock, this_thread::sleep_for and a thread-local PRNG; a function
// left empty falls back to its default.
struct RetryEnvironment {
  std::function<std::chrono::steady_clock::time_point()> now;
  std::function<void(std::chrono::milliseconds)> sleep;
  std::function<double()> uniform01;  // in [0, 1)
  // Called before each retry: the failure, the attempt that failed (1-based)
  // and the delay chosen. Counters (retries, throttles) hang off this.
  std::function<void(const Status&, int, std::chrono::milliseconds)> on_retry;

  static const RetryEnvironment& Default();
};

// The retry settings every backend's options carry (S3Config, GcsStoreOptions,
// StoreOptions): the policy, and the environment, so that any retry path can
// run on a fake clock in tests. A default-constructed environment is the real
// clock and sleep.
struct RetryOptions {
  RetryPolicy policy;
  RetryEnvironment environment;
};

bool IsRetryable(const Status& status);

// Whether a retryable failure was the service asking to slow down: HTTP 429
// or 503, or a SlowDown / TooManyRequests / rateLimitExceeded code. What the
// stores' request counters (core/storage/object_store.h) count as throttles.
bool IsThrottle(const Status& status);

// Whether the service said explicitly that the client sends too fast: HTTP
// 429, or a SlowDown / TooManyRequests / rateLimitExceeded code. Unlike
// IsThrottle, not a bare 503, which is as often an outage as a throttle.
// What the throttled retry loop does not count against max_attempts.
bool IsRateLimited(const Status& status);

// The delay before attempt `failed_attempts + 1` (full jitter), given u in [0,1).
std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int failed_attempts, double u);

namespace retry_internal {
Status RunLoop(const RetryPolicy& policy, Idempotency idempotency, std::string_view what,
               const RetryEnvironment& env, const std::function<Status()>& attempt);
}  // namespace retry_internal

// Runs `attempt` (returning Status or Result<T>) until it succeeds, fails with
// a non-retryable error, or the policy is exhausted. The final error keeps the
// last attempt's code and says how many attempts were made, e.g.
// "GET s3://b/k: gave up after 8 attempts in 41.2 s: <last error>".
template <typename F>
auto Retry(const RetryPolicy& policy, Idempotency idempotency, std::string_view what, F&& attempt,
           const RetryEnvironment& env = RetryEnvironment::Default()) -> std::invoke_result_t<F&> {
  using R = std::invoke_result_t<F&>;
  if constexpr (std::is_same_v<R, Status>) {
    return retry_internal::RunLoop(policy, idempotency, what, env, attempt);
  } else {
    std::optional<R> last;
    Status status = retry_internal::RunLoop(policy, idempotency, what, env, [&]() -> Status {
      last.emplace(attempt());
      return last->status();
    });
    if (!status.ok()) return status;
    return std::move(*last);
  }
}

}  // namespace spool
