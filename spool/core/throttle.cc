#include "spool/core/throttle.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "spool/core/cancel.h"

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

}  // namespace

RetryThrottle::RetryThrottle(std::string store) : store_(std::move(store)) {}

RetryThrottle::~RetryThrottle() = default;

std::shared_ptr<RetryThrottle> RetryThrottle::ForStore(const std::string& store) {
  Throttles& all = AllThrottles();
  std::lock_guard lock(all.mu);
  std::weak_ptr<RetryThrottle>& slot = all.by_store[store];
  if (auto live = slot.lock()) return live;
  auto made = std::make_shared<RetryThrottle>(store);
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
  // Paced once throttled: a send 1/rate_ after the last one. The rate is
  // read afresh on every wake-up, so growth speeds up the sends already
  // waiting (a send time fixed at Acquire kept each waiting request at the
  // rate of its Acquire: 4 requests waiting at 1/s sent at 1/s for 4 s after
  // the rate had grown).
  while (rate_ > 0) {
    const auto now = std::chrono::steady_clock::now();
    const auto due = last_send_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(1.0 / rate_));
    if (now >= due) break;
    if (cancel.cancelled()) {
      lock.unlock();
      Release();
      return CancelledError(store_ + ": cancelled while waiting for a request slot");
    }
    // Woken by a rate change (Record); the timeout lets a cancel end the wait.
    rate_changed_.wait_for(lock,
                           std::min<std::chrono::steady_clock::duration>(due - now, std::chrono::milliseconds(50)));
  }
  const auto now = std::chrono::steady_clock::now();
  last_send_ = now;
  CountSend(now);
  return OkStatus();
}

void RetryThrottle::CountSend(std::chrono::steady_clock::time_point now) {
  if (window_start_ == std::chrono::steady_clock::time_point{}) window_start_ = now;
  ++window_sends_;
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  if (seconds >= 1.0) {
    measured_rate_ = static_cast<double>(window_sends_) / seconds;
    window_start_ = now;
    last_window_sends_ = std::exchange(window_sends_, 0);
    last_window_successes_ = std::exchange(window_successes_, 0);
  }
}

double RetryThrottle::MeasuredRate(std::chrono::steady_clock::time_point now) const {
  // The window in progress once it is long enough to say something.
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  if (seconds >= 0.1 && window_sends_ > 0) return static_cast<double>(window_sends_) / seconds;
  if (measured_rate_ > 0) return measured_rate_;
  // Throttled within a tenth of a second of the first send: what was sent
  // so far came within that tenth. Better than no estimate (the floor
  // kMinRate, from which growth back would take tens of seconds).
  return static_cast<double>(window_sends_) / 0.1;
}

double RetryThrottle::SucceededShare() const {
  const uint64_t sends = window_sends_ + last_window_sends_;
  if (sends == 0) return 1;
  return std::min(1.0, static_cast<double>(window_successes_ + last_window_successes_) / static_cast<double>(sends));
}

void RetryThrottle::Record(const Status& outcome) {
  std::lock_guard lock(mu_);
  if (!outcome.ok() && IsRetryable(outcome) && IsThrottle(outcome)) {
    ++throttled_;
    successes_since_change_ = 0;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_cut_ >= kCutInterval) {
      // Half of what was in flight when the service said no: that load was
      // too much, whatever the limit allowed.
      limit_ = std::max(1, std::min(limit_, in_flight_) / 2);
      const double measured = MeasuredRate(now);
      double base = rate_ > 0 && (measured <= 0 || rate_ < measured) ? rate_ : measured;
      // Mostly throttled (a job's start): what was sent was far too much.
      if (SucceededShare() < 0.5) base /= 2;
      // CUBIC's fast convergence: a process cut below its previous cut's
      // rate aims a little lower still, leaving room to the others.
      w_max_ = std::max(kMinRate, base < last_cut_rate_ ? base * (1 + kRateCut) / 2 : base);
      last_cut_rate_ = base;
      rate_ = std::max(kMinRate, base * kRateCut);
      last_cut_ = now;
    }
  } else if (outcome.ok()) {
    ++window_successes_;
    if (limit_ < kMaxConcurrency && ++successes_since_change_ >= limit_) {
      ++limit_;
      successes_since_change_ = 0;
    }
    // Growth follows the time since the cut, not the number of successes
    // (throttle.h): never below the rate the cut left.
    if (rate_ > 0) {
      const double since_cut = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_cut_).count();
      const double grown = CubicRate(w_max_, since_cut);
      if (grown > rate_) {
        rate_ = grown;
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
  return State{tokens_, limit_, in_flight_, rate_, throttled_, quota_refusals_};
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
