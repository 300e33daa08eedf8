#include "spool/checkpoint/preemption.h"

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdint>

namespace spool::checkpoint {
namespace {

// Plain atomics: the signal handler reads and writes them, so no locks and
// no allocation. Lock-free on every platform spool builds for.
// The notice is claimed by arrival_claim (signal + 1; Request() stores 1),
// then its time is stored: requested() reads the time, so whoever sees it set
// also sees which signal set it.
std::atomic<int> arrival_claim{0};
std::atomic<int64_t> arrival_ns{0};  // CLOCK_MONOTONIC of the notice; 0: none
std::atomic<int64_t> grace_ns{30'000'000'000};
std::atomic<int64_t> margin_ns{5'000'000'000};

// clock_gettime is async-signal-safe; std::chrono::steady_clock reads the
// same CLOCK_MONOTONIC on Linux.
int64_t MonotonicNanos() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

void Record(int signal_number) {
  int none = 0;
  if (arrival_claim.compare_exchange_strong(none, signal_number + 1)) arrival_ns.store(MonotonicNanos());
}

void OnSignal(int signal_number) { Record(signal_number); }

}  // namespace

PreemptionNotice& PreemptionNotice::Get() {
  static PreemptionNotice notice;
  return notice;
}

PreemptionNotice& PreemptionNotice::Install(std::chrono::seconds grace, std::chrono::seconds margin,
                                            std::initializer_list<int> signals) {
  grace_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(grace).count());
  margin_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(margin).count());
  for (int signal_number : signals) {
    struct sigaction action {};
    action.sa_handler = &OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // system calls of the training loop go on
    sigaction(signal_number, &action, nullptr);
  }
  return Get();
}

void PreemptionNotice::Request() { Record(0); }

bool PreemptionNotice::requested() const { return arrival_ns.load() != 0; }

int PreemptionNotice::signal() const { return requested() ? arrival_claim.load() - 1 : 0; }

std::chrono::steady_clock::time_point PreemptionNotice::deadline() const {
  const int64_t arrival = arrival_ns.load();
  if (arrival == 0) return std::chrono::steady_clock::time_point::max();
  const int64_t when = arrival + grace_ns.load() - margin_ns.load();
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(when)));
}

std::chrono::seconds PreemptionNotice::grace() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::nanoseconds(grace_ns.load()));
}

void PreemptionNotice::Clear() {
  arrival_ns.store(0);
  arrival_claim.store(0);
}

}  // namespace spool::checkpoint
