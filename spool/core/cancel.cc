#include "spool/core/cancel.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <condition_variable>
#include <mutex>
#include <string>

namespace spool {

namespace cancel_internal {

constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

int64_t SteadyNanos(std::chrono::steady_clock::time_point when) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
}

struct State {
  std::atomic<bool> cancelled{false};
  std::atomic<int64_t> deadline{kNoDeadline};  // steady-clock nanoseconds
  std::shared_ptr<State> parent;  // null only for the process state

  // The earliest deadline of the chain.
  int64_t Deadline() const {
    int64_t earliest = kNoDeadline;
    for (const State* state = this; state != nullptr; state = state->parent.get()) {
      earliest = std::min(earliest, state->deadline.load(std::memory_order_relaxed));
    }
    return earliest;
  }

  bool IsCancelled() const {
    for (const State* state = this; state != nullptr; state = state->parent.get()) {
      if (state->cancelled.load(std::memory_order_acquire)) return true;
    }
    const int64_t earliest = Deadline();
    return earliest != kNoDeadline && SteadyNanos(std::chrono::steady_clock::now()) >= earliest;
  }
};

}  // namespace cancel_internal

namespace {

using cancel_internal::State;
using cancel_internal::SteadyNanos;

// Never destroyed: tokens are checked until the very end of the process.
const std::shared_ptr<State>& ProcessState() {
  static auto* state = new std::shared_ptr<State>(std::make_shared<State>());
  return *state;
}

// The parent of every token made outside a scope.
const std::shared_ptr<State>& WorkState() {
  static auto* state = new std::shared_ptr<State>([] {
    auto work = std::make_shared<State>();
    work->parent = ProcessState();
    return work;
  }());
  return *state;
}

// Sleepers of every token wait on one condition variable: cancels are rare,
// so waking all of them on each is cheaper than a list per token.
struct Sleepers {
  std::mutex mu;
  std::condition_variable cv;
};
Sleepers& AllSleepers() {
  static auto* sleepers = new Sleepers;
  return *sleepers;
}

thread_local std::shared_ptr<State> current_state;  // null: the work state

void Trigger(State& state) {
  if (state.cancelled.exchange(true, std::memory_order_acq_rel)) return;
  Sleepers& sleepers = AllSleepers();
  { std::lock_guard lock(sleepers.mu); }  // a sleeper between its check and its wait sees the flag
  sleepers.cv.notify_all();
}

}  // namespace

CancelToken::CancelToken() : state_(WorkState()) {}

CancelToken CancelToken::Current() { return CancelToken(current_state ? current_state : WorkState()); }

CancelToken CancelToken::Process() { return CancelToken(ProcessState()); }

bool CancelToken::cancelled() const { return state_->IsCancelled(); }

Status CancelToken::Check(std::string_view what) const {
  if (!cancelled()) return OkStatus();
  return CancelledError(std::string(what) + ": cancelled");
}

bool CancelToken::SleepFor(std::chrono::milliseconds duration) const {
  // A deadline wakes nobody: sleep no further than the earliest one.
  const int64_t deadline = state_->Deadline();
  if (deadline != cancel_internal::kNoDeadline) {
    const auto left = std::chrono::nanoseconds(deadline - SteadyNanos(std::chrono::steady_clock::now()));
    duration = std::min(duration, std::chrono::ceil<std::chrono::milliseconds>(
                                      std::max(left, std::chrono::nanoseconds::zero())));
  }
  Sleepers& sleepers = AllSleepers();
  std::unique_lock lock(sleepers.mu);
  sleepers.cv.wait_for(lock, duration, [this] { return cancelled(); });
  return !cancelled();
}

CancelSource::CancelSource(CancelToken parent) : state_(std::make_shared<State>()) {
  state_->parent = std::move(parent.state_);
}

void CancelSource::Cancel() { Trigger(*state_); }

void CancelSource::CancelAt(std::chrono::steady_clock::time_point deadline) {
  state_->deadline.store(SteadyNanos(deadline), std::memory_order_relaxed);
}

CancelScope::CancelScope(CancelToken token) : previous_(CancelToken::Current()) {
  current_state = std::move(token.state_);
}

CancelScope::~CancelScope() { current_state = std::move(previous_.state_); }

void CancelWork() { Trigger(*WorkState()); }

void CancelProcess() { Trigger(*ProcessState()); }

}  // namespace spool
