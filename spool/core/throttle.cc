#include "spool/core/throttle.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "spool/core/cancel.h"
#include "spool/core/env.h"
#include "spool/core/log.h"
#include "spool/core/pacing_block.h"

namespace spool {
namespace {

// Every live throttle of the process, by store; weak so that a store's
// throttle goes away with its last client.
struct Throttles {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<RetryThrottle>, std::less<>> by_store;
};

Throttles& AllThrottles() {
  static auto* throttles = new Throttles;  // never destroyed: used until exit
  return *throttles;
}

thread_local std::optional<std::chrono::milliseconds> retry_after;

using Clock = std::chrono::steady_clock;

Clock::time_point FromNanos(int64_t nanos) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(nanos)));
}

int64_t ToNanos(Clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

double SecondsBetween(int64_t from_ns, Clock::time_point to) {
  return std::chrono::duration<double>(to - FromNanos(from_ns)).count();
}

// The pacing block ForStore gives a store: the host's unless the
// environment says otherwise or it cannot be had.
std::unique_ptr<PacingBlock> PacingFor(const std::string& store, const std::string& endpoint) {
  const std::optional<std::string> scope = CurrentEnv().Get("SPOOL_THROTTLE_SCOPE");
  if (scope == "process") return PacingBlock::Private();
  if (scope && scope != "host") {
    log::Write(log::Level::kInfo, "throttle",
               "ignoring SPOOL_THROTTLE_SCOPE=\"" + *scope + "\" (want host or process); using host");
  }
  std::string why_not;
  if (auto shared =
          PacingBlock::OnHost(RetryThrottle::HostPacingKey(store, endpoint), PacingBlock::kHostDir, &why_not)) {
    return shared;
  }
  log::Debug("throttle", store + " is paced by this process alone: " + why_not);
  return PacingBlock::Private();
}

}  // namespace

RetryThrottle::RetryThrottle(std::string store, std::unique_ptr<PacingBlock> pacing)
    : store_(std::move(store)), pacing_(pacing ? std::move(pacing) : PacingBlock::Private()) {}

RetryThrottle::~RetryThrottle() = default;

bool RetryThrottle::paced_with_host() const { return pacing_->on_host(); }

std::string RetryThrottle::HostPacingKey(const std::string& store, const std::string& endpoint) {
  return store + " at " + endpoint;
}

std::shared_ptr<RetryThrottle> RetryThrottle::ForStore(const std::string& store, const std::string& endpoint) {
  Throttles& all = AllThrottles();
  std::lock_guard lock(all.mu);
  std::weak_ptr<RetryThrottle>& slot = all.by_store[store];
  if (auto live = slot.lock()) return live;
  auto made = std::make_shared<RetryThrottle>(store, PacingFor(store, endpoint));
  slot = made;
  // Drop entries whose throttle is gone, so the map stays small.
  std::erase_if(all.by_store, [](const auto& entry) { return entry.second.expired(); });
  return made;
}

void RetryThrottle::ForEach(const std::function<void(const RetryThrottle&)>& visit) {
  Throttles& all = AllThrottles();
  std::lock_guard lock(all.mu);
  for (const auto& [store, weak] : all.by_store) {
    if (auto live = weak.lock()) visit(*live);
  }
}

Status RetryThrottle::Acquire() {
  const CancelToken cancel = CancelToken::Current();
  std::unique_lock lock(mu_);
  // Woken by Release; the timeout lets a cancel end the wait.
  while (in_flight_ >= limit_) {
    if (cancel.cancelled()) return CancelledError(store_ + ": cancelled while waiting for a request slot");
    slot_freed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  ++in_flight_;
  // Paced once throttled: a send 1/rate after the last one (the last of
  // the host's, when the block is shared). The rate is read afresh on every
  // wake-up, so growth speeds up the sends already waiting (a send time
  // fixed at Acquire kept each waiting request at the rate of its Acquire:
  // 4 requests waiting at 1/s sent at 1/s for 4 s after the rate had grown).
  while (true) {
    Clock::time_point due;
    {
      PacingBlock::Guard guard(*pacing_);
      PacingState& pacing = guard.state();
      const auto now = Clock::now();
      if (pacing.rate > 0) {
        due = FromNanos(pacing.last_send_ns) +
              std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / pacing.rate));
      }
      if (pacing.rate <= 0 || now >= due) {
        pacing.last_send_ns = ToNanos(now);
        CountSend(pacing, now);
        return OkStatus();
      }
    }
    if (cancel.cancelled()) {
      lock.unlock();
      Release();
      return CancelledError(store_ + ": cancelled while waiting for a request slot");
    }
    // Woken by this process's rate changes (Record), or at the due time,
    // which another process's send or growth may have moved; the timeout
    // lets a cancel end the wait.
    rate_changed_.wait_for(lock, std::min<Clock::duration>(due - Clock::now(), std::chrono::milliseconds(50)));
  }
}

void RetryThrottle::CountSend(PacingState& pacing, Clock::time_point now) {
  // A window older than two at the slowest pace is from before an idle
  // spell, or from another job on the host: it says nothing of the rate now.
  if (pacing.window_start_ns == 0 || SecondsBetween(pacing.window_start_ns, now) >= 2 / kMinRate) {
    pacing.window_start_ns = ToNanos(now);
    pacing.window_sends = pacing.window_successes = 0;
    pacing.last_window_sends = pacing.last_window_successes = 0;
    pacing.measured_rate = 0;
  }
  ++pacing.window_sends;
  const double seconds = SecondsBetween(pacing.window_start_ns, now);
  if (seconds >= 1.0) {
    pacing.measured_rate = static_cast<double>(pacing.window_sends) / seconds;
    pacing.window_start_ns = ToNanos(now);
    pacing.last_window_sends = std::exchange(pacing.window_sends, 0);
    pacing.last_window_successes = std::exchange(pacing.window_successes, 0);
  }
}

double RetryThrottle::MeasuredRate(const PacingState& pacing, Clock::time_point now) {
  // The window in progress once it is long enough to say something.
  const double seconds = SecondsBetween(pacing.window_start_ns, now);
  if (seconds >= 0.1 && pacing.window_sends > 0) return static_cast<double>(pacing.window_sends) / seconds;
  if (pacing.measured_rate > 0) return pacing.measured_rate;
  // Throttled within a tenth of a second of the first send: what was sent
  // so far came within that tenth. Better than no estimate (the floor
  // kMinRate, from which growth back would take tens of seconds).
  return static_cast<double>(pacing.window_sends) / 0.1;
}

double RetryThrottle::SucceededShare(const PacingState& pacing) {
  const uint64_t sends = pacing.window_sends + pacing.last_window_sends;
  if (sends == 0) return 1;
  return std::min(
      1.0, static_cast<double>(pacing.window_successes + pacing.last_window_successes) / static_cast<double>(sends));
}

void RetryThrottle::Record(const Status& outcome) {
  std::lock_guard lock(mu_);
  if (!outcome.ok() && IsRetryable(outcome) && IsThrottle(outcome)) {
    ++throttled_;
    successes_since_change_ = 0;
    const auto now = Clock::now();
    if (now - last_cut_ >= kCutInterval) {
      // Half of what was in flight when the service said no: that load was
      // too much, whatever the limit allowed.
      limit_ = std::max(1, std::min(limit_, in_flight_) / 2);
      last_cut_ = now;
    }
    PacingBlock::Guard guard(*pacing_);
    PacingState& pacing = guard.state();
    // Once per kCutInterval for the block: a burst of throttles, across
    // the host's processes when it is shared, counts once.
    if (pacing.last_cut_ns == 0 || now - FromNanos(pacing.last_cut_ns) >= kCutInterval) {
      const double measured = MeasuredRate(pacing, now);
      double base = pacing.rate > 0 && (measured <= 0 || pacing.rate < measured) ? pacing.rate : measured;
      // Mostly throttled (a job's start): what was sent was far too much.
      if (SucceededShare(pacing) < 0.5) base /= 2;
      // CUBIC's fast convergence: a limiter cut below its previous cut's
      // rate aims a little lower still, leaving room to the others.
      pacing.w_max = std::max(kMinRate, base < pacing.last_cut_rate ? base * (1 + kRateCut) / 2 : base);
      pacing.last_cut_rate = base;
      pacing.rate = std::max(kMinRate, base * kRateCut);
      pacing.last_cut_ns = ToNanos(now);
    }
  } else if (outcome.ok()) {
    if (limit_ < kMaxConcurrency && ++successes_since_change_ >= limit_) {
      ++limit_;
      successes_since_change_ = 0;
    }
    PacingBlock::Guard guard(*pacing_);
    PacingState& pacing = guard.state();
    ++pacing.window_successes;
    // Growth follows the time since the cut, not the number of successes
    // (throttle.h): never below the rate the cut left.
    if (pacing.rate > 0) {
      const double grown = CubicRate(pacing.w_max, SecondsBetween(pacing.last_cut_ns, Clock::now()));
      if (grown > pacing.rate) {
        pacing.rate = grown;
        rate_changed_.notify_all();
      }
    }
  }
}

double RetryThrottle::CubicRate(double w_max, double seconds_since_cut) {
  // W(t) = W_max (1 + c (t / K - 1)^3): cut x W_max at t = 0 (c = 1 - cut),
  // W_max at t = K, then ever faster beyond it (c = kProbeGrowth). Capped so
  // that a store calm for minutes stays a finite number (it is unpaced in
  // effect long before).
  const double x = seconds_since_cut / kRecoverSeconds - 1;
  return std::min(kMaxRate, w_max * (1 + (x < 0 ? 1 - kRateCut : kProbeGrowth) * x * x * x));
}

void RetryThrottle::Release() {
  {
    std::lock_guard lock(mu_);
    --in_flight_;
  }
  slot_freed_.notify_one();
}

bool RetryThrottle::SpendRetry(const Status& failure, int* cost) {
  const int price = failure.code() == StatusCode::kDeadlineExceeded ? kTimeoutRetryCost : kRetryCost;
  std::lock_guard lock(mu_);
  if (tokens_ < price) {
    ++quota_refusals_;
    return false;
  }
  tokens_ -= price;
  *cost = price;
  return true;
}

void RetryThrottle::Refund(int last_retry_cost) {
  std::lock_guard lock(mu_);
  tokens_ = std::min(kQuotaCapacity, tokens_ + (last_retry_cost > 0 ? last_retry_cost : kSuccessRefund));
}

RetryThrottle::State RetryThrottle::state() const {
  std::lock_guard lock(mu_);
  PacingBlock::Guard guard(*pacing_);
  return State{tokens_, limit_, in_flight_, guard.state().rate, throttled_, quota_refusals_};
}

std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  int64_t seconds = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || seconds < 0) {
    return std::nullopt;
  }
  return std::chrono::milliseconds(std::min<int64_t>(seconds, 86'400) * 1000);
}

void NoteRetryAfter(std::optional<std::chrono::milliseconds> delay) { retry_after = delay; }

std::optional<std::chrono::milliseconds> TakeRetryAfter() { return std::exchange(retry_after, std::nullopt); }

}  // namespace spool
