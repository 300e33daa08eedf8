// RetryThrottle: what keeps a store's retries from turning into a retry
// storm when the service throttles (S3 503 SlowDown, GCS 429). One per store
// and process (ForStore shares it between every client of the same store in
// the process), used by the retry loop (RetryThrottled below) around every
// attempt, so the loader, transfers and checkpoint uploads all go through it.
// Its send-rate limit is the host's: ForStore keeps it in a PacingBlock that
// every process of the host using the store maps (pacing_block.h), so a
// node's ranks and DataLoader workers pace as one. Per process, 16-64
// processes behind one throttled prefix sent 1.30-1.52x the requests needed,
// each probing above its share; paced as one, 1.01-1.03x
// (bench/results/throttling-scale-2026-11-28T1346Z-loader-ranks.md).
//
// Two parts:
//
// * A retry quota (the AWS SDKs' "standard" retry mode): a bucket of
//   kQuotaCapacity = 500 tokens. A retry spends kRetryCost = 5 tokens
//   (kTimeoutRetryCost = 10 after a timeout, DeadlineExceeded); a request
//   that succeeds first time refunds kSuccessRefund = 1, one that succeeds
//   after retrying refunds what its last retry cost. When a retry cannot be
//   paid, the request fails at once (Unavailable, "the retry quota of <store>
//   is empty") instead of retrying: a store that fails most of its requests
//   stops multiplying its load.
//
// * An adaptive concurrency limit (this process's) and rate limit (the
//   pacing block's: the host's, or this process's) (AIMD, as TCP's
//   congestion window; the AWS SDKs' "adaptive" mode for the rate): at most
//   limit() attempts are in flight at once. A throttled answer cuts the limit to
//   half of the attempts in flight (at least 1), at most once per
//   kCutInterval so that one burst of throttles counts once; every limit()
//   successful attempts in a row grow it by 1, up to kMaxConcurrency. A
//   failed attempt that is retried keeps its slot through its backoff sleep.
//   Concurrency alone does not bound the rate when answers are quick, so the
//   first throttle also sets a send-rate limit: kRateCut (80%) of the rate
//   measured over the last second (at least kMinRate; a throttle within a
//   tenth of a second of the first send takes what was sent as a tenth's
//   worth), cut again so on each later cut. When fewer than half of the
//   sends of the last one to two seconds succeeded, as at a job's start
//   (a store never throttled is not paced, so every process starts at full
//   concurrency), the cut starts from half that rate: the process comes
//   down in fewer cuts, kCutInterval apart, throttled all the while.
//   Cutting from the succeeded share always (at least half) cut the
//   requests more, 1.34-1.40x to 1.22-1.26x at 32 processes, but cost 0.05
//   of the whole run's goodput: the processes' W_max were lower when the
//   others ended (bench/results/throttling-scale-2026-11-27T1837Z-succeeded-share.md).
//   A paced send waits for its turn at the rate in force when it goes, not
//   the one when it asked.
//   Growth is CUBIC's (TCP CUBIC, RFC 9438), by the seconds t since the
//   last cut: W(t) = W_max (1 + c (t / K - 1)^3), K = kRecoverSeconds
//   (2 s), W_max the rate the cut was made from. Concave below W_max
//   (c = 0.2, from the cut's 80%): back to 97.5% of it at 1 s, to it at
//   2 s. Convex beyond (c = kProbeGrowth, 1): +12.5% at 3 s, double at 4 s.
//   A process gets there only after K s without a throttle, when the
//   prefix has room: the others have finished or slowed down. CUBIC's own
//   c = 0.2 on both sides (+2.5% at 3 s, +20% at 4 s, double by 5.4 s) left
//   the last processes of a job seconds below the limit once the others had
//   ended: 16 loader workers had 0.70-0.79 of the limit over the whole run,
//   with c = 1 0.88-0.89, for 1.26-1.27x the requests needed instead of
//   1.22-1.26x (bench/results/throttling-scale-2026-11-27T1530Z-probe.md).
//   A process cut again below its previous cut aims at 90% of the new rate
//   instead (fast convergence: the larger processes give way). Growth by
//   time, not by a step per success or per process: N processes sharing a
//   throttled prefix return to the sum they were cut from at the same time
//   whatever N is, and stay near it; the first version's fixed step of 1
//   request/s each grew the sum by N requests/s every second (64 processes
//   under a limit of 60/s were throttled again within a second of each cut,
//   sent 1.66x the GETs needed, and 7 of 64 ran out of attempts), and the
//   second's growth of 5% of the rate per second left 16 processes at 0.55x
//   of the limit. bench/results/throttling-scale-*.md has the runs that
//   chose these.
//   A store never throttled is not paced at all.
//
// Throttled: HTTP 429 or 503, S3 SlowDown / TooManyRequests, GCS
// rateLimitExceeded (IsThrottle in retry.h). A Retry-After header on an error
// answer is honoured: the next attempt waits at least that long (capped at
// the policy's max_backoff). The clients report it with NoteRetryAfter on
// the attempt's thread; the loop reads it after the attempt failed.
//
// Thread-safe: every member may be called from any thread. Lifetime: shared
// by the clients that use it; ForStore keeps only a weak reference, and the
// metrics (metrics/registry.cc) report the live ones.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "spool/core/retry.h"
#include "spool/core/status.h"

namespace spool {

// Where the rate limit lives (pacing_block.h, internal to spool::core).
class PacingBlock;
struct PacingState;

class RetryThrottle {
 public:
  static constexpr int kQuotaCapacity = 500;
  static constexpr int kRetryCost = 5;
  static constexpr int kTimeoutRetryCost = 10;
  static constexpr int kSuccessRefund = 1;
  static constexpr int kMaxConcurrency = 1024;
  static constexpr std::chrono::milliseconds kCutInterval{100};
  static constexpr double kMinRate = 0.5;      // requests per second, the rate limit's floor
  static constexpr double kRateCut = 0.8;      // of the measured rate, kept on a throttle
  static constexpr double kRecoverSeconds = 2;  // back to the rate of the last cut this long after it
  static constexpr double kProbeGrowth = 1;     // beyond it: doubled another kRecoverSeconds later
  static constexpr double kMaxRate = 1e6;       // requests per second, the growth's ceiling

  // The rate kRecoverSeconds' cubic gives `seconds_since_cut` after a cut
  // whose aim was `w_max` (throttle.h's header comment). Pure; for tests.
  static double CubicRate(double w_max, double seconds_since_cut);

  // `store` names it in errors and metrics ("s3://bucket"); `pacing` holds
  // its rate limit (PacingBlock::Private() when null: this process alone).
  explicit RetryThrottle(std::string store, std::unique_ptr<PacingBlock> pacing = nullptr);
  RetryThrottle(const RetryThrottle&) = delete;
  RetryThrottle& operator=(const RetryThrottle&) = delete;
  ~RetryThrottle();

  // The process's throttle of `store`, made on first use. Its rate limit is
  // the host's for `store` at `endpoint` (PacingBlock::OnHost), unless
  // SPOOL_THROTTLE_SCOPE=process or the host's block cannot be used: then
  // this process's alone. The first caller's endpoint keys it; a process
  // reaching one bucket name at two endpoints shares one throttle, as before.
  static std::shared_ptr<RetryThrottle> ForStore(const std::string& store, const std::string& endpoint);
  // Calls `visit` with every live throttle of the process (for metrics).
  static void ForEach(const std::function<void(const RetryThrottle&)>& visit);

  const std::string& store() const { return store_; }
  // True when the rate limit is the host's (pacing_block.h).
  bool paced_with_host() const;
  // The key of `store` at `endpoint`'s host pacing block.
  static std::string HostPacingKey(const std::string& store, const std::string& endpoint);

  // Waits for a free slot, then (once the store has been throttled) for the
  // send time its rate limit gives; Cancelled when the current CancelToken
  // is cancelled while waiting. Each OK is matched by one Release().
  Status Acquire();
  // Records how the attempt went (AIMD) without freeing its slot.
  void Record(const Status& outcome);
  void Release();

  // Pays for a retry after `failure`; false (nothing spent) when the quota
  // cannot. `cost` receives what was spent.
  bool SpendRetry(const Status& failure, int* cost);
  // A request succeeded; `last_retry_cost` is what its last retry cost (0:
  // it did not retry).
  void Refund(int last_retry_cost);

  struct State {
    int quota_tokens = 0;
    int concurrency_limit = 0;
    int in_flight = 0;
    double rate_limit = 0;        // requests per second; 0: not limited (never throttled)
    uint64_t throttled = 0;       // throttled answers seen
    uint64_t quota_refusals = 0;  // retries refused for want of tokens
  };
  State state() const;

 private:
  // All three with the pacing block's Guard held.
  static void CountSend(PacingState& pacing, std::chrono::steady_clock::time_point now);
  static double MeasuredRate(const PacingState& pacing, std::chrono::steady_clock::time_point now);
  static double SucceededShare(const PacingState& pacing);

  const std::string store_;
  // The rate limit and what it measures: this process's, or the host's
  // (pacing_block.h). Locked after mu_ when both are held.
  const std::unique_ptr<PacingBlock> pacing_;
  mutable std::mutex mu_;
  std::condition_variable slot_freed_;
  std::condition_variable rate_changed_;
  int tokens_ = kQuotaCapacity;
  int limit_ = kMaxConcurrency;
  int in_flight_ = 0;
  int successes_since_change_ = 0;
  // When this process last cut its concurrency limit (the rate's cuts are
  // timed in the pacing block).
  std::chrono::steady_clock::time_point last_cut_{};
  uint64_t throttled_ = 0;
  uint64_t quota_refusals_ = 0;
};

// The delay a Retry-After header asks for: delta-seconds only (an HTTP date
// is ignored); nullopt when absent or not a number.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value);
// Remembers, on this thread, the Retry-After of the error answer the current
// attempt got (nullopt clears it). The retry loop consumes it.
void NoteRetryAfter(std::optional<std::chrono::milliseconds> delay);
std::optional<std::chrono::milliseconds> TakeRetryAfter();

namespace retry_internal {
// The loop of retry.h with `throttle` (may be null: no quota, no limit).
Status RunThrottledLoop(const RetryPolicy& policy, Idempotency idempotency, std::string_view what,
                        const RetryEnvironment& env, RetryThrottle* throttle, const std::function<Status()>& attempt);
}  // namespace retry_internal

// Retry (retry.h) with a store's quota and concurrency limit around each
// attempt. What the S3 and GCS clients use for every exchange.
template <typename F>
auto RetryThrottled(const RetryPolicy& policy, Idempotency idempotency, std::string_view what, F&& attempt,
                    const RetryEnvironment& env, RetryThrottle* throttle) -> std::invoke_result_t<F&> {
  using R = std::invoke_result_t<F&>;
  if constexpr (std::is_same_v<R, Status>) {
    return retry_internal::RunThrottledLoop(policy, idempotency, what, env, throttle, attempt);
  } else {
    std::optional<R> last;
    Status status = retry_internal::RunThrottledLoop(policy, idempotency, what, env, throttle, [&]() -> Status {
      last.emplace(attempt());
      return last->status();
    });
    if (!status.ok()) return status;
    return std::move(*last);
  }
}

}  // namespace spool
