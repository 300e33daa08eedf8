#include "spool/core/executor.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "spool/core/bytes.h"
#include "spool/core/env.h"
#include "spool/core/log.h"
#include "spool/core/per_process.h"

namespace spool {
namespace {

int DefaultThreadCount() {
  // Threads mostly wait on the network: 16 keeps a folder of small objects
  // moving even on a 2-core machine (measured in bench/, small-object case).
  int fallback = std::max(16, 2 * static_cast<int>(std::thread::hardware_concurrency()));
  const std::optional<std::string> text = CurrentEnv().Get("SPOOL_THREADS");
  if (!text) return fallback;
  char* end = nullptr;
  long threads = std::strtol(text->c_str(), &end, 10);
  if (*end != '\0' || threads < 1 || threads > 1024) {
    log::Write(log::Level::kInfo, "executor",
               "ignoring SPOOL_THREADS=\"" + *text + "\" (want 1 to 1024); using " + std::to_string(fallback));
    return fallback;
  }
  return static_cast<int>(threads);
}

uint64_t DefaultBudgetBytes() {
  constexpr uint64_t kFallback = 512 * kMiB;
  const std::optional<std::string> text = CurrentEnv().Get("SPOOL_MEMORY_BUDGET");
  if (!text) return kFallback;
  Result<uint64_t> bytes = ParseByteSize(*text);
  if (!bytes.ok() || *bytes == 0) {
    log::Write(log::Level::kInfo, "executor",
               "ignoring SPOOL_MEMORY_BUDGET=\"" + *text + "\"; using " + FormatBytes(kFallback));
    return kFallback;
  }
  return *bytes;
}

}  // namespace

// ---- Executor ---------------------------------------------------------------

Executor::Executor(int threads) {
  threads = std::max(threads, 1);
  workers_.reserve(static_cast<size_t>(threads));
  live_workers_ = threads;
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

Executor::~Executor() { Shutdown(); }

void Executor::Run(Queued& item) {
  CancelScope scope(std::move(item.token));
  item.task();
  item.task = nullptr;  // what the task captured goes before the scope ends
}

void Executor::Submit(std::function<void()> task) {
  Queued item{std::move(task), CancelToken::Current()};
  {
    std::lock_guard<std::mutex> lock(mu_);
    // While stopping, the workers still drain the queue; only once they are
    // all gone does the task run here (callers often hold a lock of their
    // own, which the task may need: never run it inline while avoidable).
    if (live_workers_ > 0) {
      queue_.push_back(std::move(item));
      cv_.notify_one();
      return;
    }
  }
  Run(item);
}

bool Executor::RunOne() {
  Queued item;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return false;
    item = std::move(queue_.front());
    queue_.pop_front();
  }
  Run(item);
  return true;
}

void Executor::WorkerLoop() {
  for (;;) {
    Queued item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // When stopping, drain the queue first: every submitted task runs.
      if (queue_.empty()) {
        --live_workers_;
        exited_.notify_all();
        return;
      }
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    Run(item);
  }
}

bool Executor::Shutdown(std::chrono::milliseconds bound) {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  const auto all_exited = [this] { return live_workers_ == 0; };
  if (bound.count() == 0) {
    exited_.wait(lock, all_exited);
  } else if (!exited_.wait_for(lock, bound, all_exited)) {
    return false;
  }
  std::vector<std::thread> workers = std::move(workers_);
  workers_.clear();
  lock.unlock();
  for (std::thread& worker : workers) worker.join();
  return true;
}

namespace {

// How long exit waits for the default pool: first with only the work
// cancelled (requests in flight notice within about a second, and cleanup
// such as aborting an upload can still reach the server), then with
// everything cancelled. A task blocked elsewhere (a stuck local read) is not
// waited for longer than the two together.
constexpr std::chrono::milliseconds kCleanupGrace{2'000};
constexpr std::chrono::milliseconds kFinalBound{3'000};

// Fork. A child made by fork() inherits the parent's objects but none of its
// threads: the parent's default pool would take tasks no thread runs (or
// block on a condition variable copied mid-signal), and its default budget
// counts bytes the parent's threads hold. So the defaults belong to a
// process: a child's first call makes its own, and the parent's copies are
// left untouched there (leaked, never used). torch DataLoader workers and
// multiprocessing fork; this keeps every path that falls back on a default
// safe in them. The generation changes in the child, cheaper than getpid().
std::atomic<uint64_t> process_generation{0};
void OnForkChild() { process_generation.fetch_add(1, std::memory_order_acq_rel); }
const bool fork_handler_installed = [] { return pthread_atfork(nullptr, nullptr, &OnForkChild) == 0; }();

using internal::CurrentOf;
using internal::PerProcess;

std::atomic<PerProcess<Executor>*> default_executor{nullptr};
std::atomic<PerProcess<ByteBudget>*> default_budget{nullptr};
std::mutex default_executor_mu;
std::mutex default_budget_mu;

}  // namespace

Executor& DefaultExecutor() {
  // Shut down at exit, before the libraries its tasks use are torn down (the
  // handler, registered once, is inherited by forked children and then shuts
  // down the child's own pool, if it made one).
  static const bool at_exit = [] { return std::atexit(&ShutdownExecutors) == 0; }();
  (void)at_exit;
  (void)fork_handler_installed;
  return CurrentOf(default_executor, default_executor_mu, [] { return new Executor(DefaultThreadCount()); });
}

uint64_t ForkGeneration() { return process_generation.load(std::memory_order_acquire); }

void ShutdownExecutors() {
  CancelWork();
  PerProcess<Executor>* current = default_executor.load(std::memory_order_acquire);
  // None made, or only the parent's (in a forked child): nothing to wait for.
  if (current == nullptr || current->generation != process_generation.load(std::memory_order_acquire)) return;
  Executor* executor = current->object;
  if (executor->Shutdown(kCleanupGrace)) return;
  CancelProcess();
  if (!executor->Shutdown(kFinalBound)) {
    log::Write(log::Level::kInfo, "executor",
               "exiting with tasks still running after " + std::to_string((kCleanupGrace + kFinalBound).count()) +
                   " ms; they were cancelled");
  }
}

// ---- TaskGroup --------------------------------------------------------------

TaskGroup::TaskGroup(Executor& executor) : executor_(executor) {}

TaskGroup::~TaskGroup() { Wait().IgnoreError(); }

void TaskGroup::Submit(std::function<Status()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  executor_.Submit([this, task = std::move(task)]() mutable {
    Status status = task();
    // Release what the task captured (buffers, leases) before Wait() can
    // return.
    task = nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok() && first_error_.ok()) first_error_ = std::move(status);
    // Notify while holding the lock: once it is released, Wait() may return
    // and the group be destroyed.
    if (--pending_ == 0) done_cv_.notify_all();
  });
}

Status TaskGroup::Wait() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_ == 0) return first_error_;
    }
    // Help instead of blocking: the queued task may be ours, or one that ours
    // is waiting for.
    if (executor_.RunOne()) continue;
    // Nothing queued: our remaining tasks are running on other threads.
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return pending_ == 0; });
  }
}

bool TaskGroup::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !first_error_.ok();
}

void TaskGroup::Cancel(Status reason) {
  if (reason.ok()) reason = CancelledError("cancelled");
  std::lock_guard<std::mutex> lock(mu_);
  if (first_error_.ok()) first_error_ = std::move(reason);
}

// ---- ByteBudget -------------------------------------------------------------

ByteBudget::ByteBudget(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

uint64_t ByteBudget::Acquire(uint64_t bytes) {
  bytes = std::min(bytes, capacity_);
  if (bytes == 0) return 0;
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  cv_.wait(lock, [&] { return now_serving_ == ticket && in_use_ + bytes <= capacity_; });
  ++now_serving_;
  ++changes_;  // a TryAcquire that the queue held back may fit now
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  // The next in line may fit too.
  cv_.notify_all();
  return bytes;
}

uint64_t ByteBudget::TryAcquire(uint64_t bytes) {
  bytes = std::min(bytes, capacity_);
  if (bytes == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  // Do not jump the queue of blocked Acquire calls.
  if (now_serving_ != next_ticket_ || in_use_ + bytes > capacity_) return 0;
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  return bytes;
}

void ByteBudget::Release(uint64_t bytes) {
  if (bytes == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ -= std::min(bytes, in_use_);
    ++changes_;
  }
  cv_.notify_all();
}

uint64_t ByteBudget::changes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return changes_;
}

void ByteBudget::WaitForChange(uint64_t seen) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return changes_ != seen; });
}

uint64_t ByteBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

uint64_t ByteBudget::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

ByteBudget::Lease& ByteBudget::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Reset();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

ByteBudget::Lease ByteBudget::Lease::Adopt(ByteBudget& budget, uint64_t bytes) {
  Lease lease;
  lease.budget_ = &budget;
  lease.bytes_ = bytes;
  return lease;
}

std::optional<ByteBudget::Lease> ByteBudget::Lease::TryAcquire(ByteBudget& budget, uint64_t bytes) {
  if (std::min(bytes, budget.capacity()) == 0) return Lease();
  const uint64_t taken = budget.TryAcquire(bytes);
  if (taken == 0) return std::nullopt;
  return Adopt(budget, taken);
}

void ByteBudget::Lease::Reset() {
  if (budget_ != nullptr) budget_->Release(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

ByteBudget& DefaultByteBudget() {
  return CurrentOf(default_budget, default_budget_mu, [] { return new ByteBudget(DefaultBudgetBytes()); });
}

}  // namespace spool
