// The shared I/O thread pool and the process-wide byte budget.
//
// Components receive an Executor (and a ByteBudget) through their options
// rather than creating threads of their own, so one process has one pool
// whose size the user controls. DefaultExecutor() is the pool used when the
// caller passes none: created on first use, SPOOL_THREADS threads (default:
// max(16, 2 x cores), since the work is I/O-bound).
//
// Fork: the default pool and budget belong to the process that made them. A
// child made by fork() (torch DataLoader workers, multiprocessing) gets its
// own on first use; the parent's are never used there. Executors and
// budgets a caller made itself are the caller's to keep out of children.
//
// Tasks that wait for other tasks must wait through a TaskGroup: its Wait()
// runs queued tasks on the waiting thread instead of blocking, so nested
// parallelism (shards whose parts upload in parallel) never deadlocks the
// pool, whatever its size. That guarantee holds when tasks block only in
// Wait() of groups they created: a task that blocks on anything else (a
// ByteBudget, a queue) may be run nested inside a waiter that holds what it
// waits for. Take budget leases before submitting, or use TryAcquire (a
// writer reserving part buffers does so through PartPipeline, in
// part_pipeline.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "spool/core/cancel.h"
#include "spool/core/status.h"

namespace spool {

class Executor {
 public:
  explicit Executor(int threads);
  ~Executor();  // Shutdown() without a bound: runs every queued task, joins
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task` with the caller's current CancelToken. Once Shutdown has
  // seen every worker exit, the task runs on the calling thread instead, so
  // no waiter is left hanging.
  void Submit(std::function<void()> task);
  int threads() const { return static_cast<int>(workers_.size()); }

  // Runs one queued task on the calling thread; false if the queue was empty.
  bool RunOne();

  // Stops taking tasks, lets the workers finish the queue and waits up to
  // `bound` for them (forever when zero). Workers still busy after the bound
  // are left to finish on their own (detached) and false is returned.
  // Idempotent.
  bool Shutdown(std::chrono::milliseconds bound = std::chrono::milliseconds::zero());

 private:
  struct Queued {
    std::function<void()> task;
    CancelToken token;
  };
  void WorkerLoop();
  static void Run(Queued& item);

  std::mutex mu_;
  std::condition_variable cv_;       // a task was queued, or stopping_
  std::condition_variable exited_;   // a worker returned
  std::deque<Queued> queue_;
  bool stopping_ = false;
  int live_workers_ = 0;
  std::vector<std::thread> workers_;
};

// The pool used when the caller passes none (see the top of this file).
Executor& DefaultExecutor();

// 0 in the process that started; another value in each child made by fork()
// (and its children). Lets caches of process-bound things (pools, stores
// and their connections) tell a child from its parent. Lock-free.
uint64_t ForkGeneration();

// Cancels the process token and shuts the default executor down, waiting at
// most a few seconds. Runs at exit; safe to call earlier and more than once.
// Any spool object still working afterwards fails with Cancelled.
void ShutdownExecutors();

// A set of tasks submitted together and waited for together. Keeps the first
// error; after an error, tasks not yet started see cancelled() == true and
// may return early. Not copyable; Wait() must be called before destruction
// (the destructor waits too).
class TaskGroup {
 public:
  explicit TaskGroup(Executor& executor);
  ~TaskGroup();
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  void Submit(std::function<Status()> task);
  // Waits for every submitted task (helping with queued work meanwhile) and
  // returns the first error, or OK.
  Status Wait();
  bool cancelled() const;
  void Cancel(Status reason);

 private:
  Executor& executor_;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  size_t pending_ = 0;
  Status first_error_;
};

// Bounds the bytes held in buffers in flight across the whole process
// (read-ahead, upload parts, loader queues). Acquire blocks until the bytes
// are available; a request larger than the capacity is clamped to it so a
// single huge part cannot deadlock. Waiters are served in arrival order, so a
// large request is not starved by a stream of small ones. Do not acquire
// while holding another lease of the same budget. Thread-safe.
class ByteBudget {
 public:
  explicit ByteBudget(uint64_t capacity_bytes);

  // Blocks until `bytes` (clamped to capacity) fit; returns the amount taken,
  // which the caller must Release.
  uint64_t Acquire(uint64_t bytes);
  // Takes the bytes only if they fit now; returns 0 when they do not.
  uint64_t TryAcquire(uint64_t bytes);
  void Release(uint64_t bytes);

  uint64_t capacity() const { return capacity_; }
  uint64_t in_use() const;
  uint64_t peak() const;  // the most ever in use at once

  // For a caller that must not block in Acquire (it helps run tasks instead,
  // or stops on its own events): changes() counts the events after which
  // bytes may fit that did not before (a release, a blocked Acquire served),
  // and WaitForChange(seen) blocks until changes() != seen. Read changes()
  // before trying, so that no event is missed between the try and the wait.
  uint64_t changes() const;
  void WaitForChange(uint64_t seen);

  // RAII for bytes of one budget: released on destruction or Reset().
  // Movable, not copyable; not thread-safe itself.
  class Lease {
   public:
    Lease() = default;
    // Blocks until the bytes fit (Acquire); a null budget leases nothing.
    Lease(ByteBudget* budget, uint64_t bytes) : budget_(budget), bytes_(budget ? budget->Acquire(bytes) : 0) {}
    // Owns `bytes` the caller already took from `budget` (Acquire or
    // TryAcquire), so that they are released like any lease's.
    static Lease Adopt(ByteBudget& budget, uint64_t bytes);
    // Takes `bytes` (clamped to capacity) only if they fit now, without
    // blocking; nullopt when they do not. Nothing to take always succeeds.
    static std::optional<Lease> TryAcquire(ByteBudget& budget, uint64_t bytes);

    Lease(Lease&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) {
      other.budget_ = nullptr;
      other.bytes_ = 0;
    }
    Lease& operator=(Lease&& other) noexcept;
    ~Lease() { Reset(); }
    void Reset();
    uint64_t bytes() const { return bytes_; }

   private:
    ByteBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

 private:
  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t in_use_ = 0;
  uint64_t peak_ = 0;
  uint64_t next_ticket_ = 0;  // handed to each blocking Acquire, in order
  uint64_t now_serving_ = 0;  // the ticket allowed to take bytes next
  uint64_t changes_ = 0;      // see changes()
};

// The budget used when the caller passes none: SPOOL_MEMORY_BUDGET bytes
// (e.g. "1GiB"; default 512 MiB).
ByteBudget& DefaultByteBudget();

}  // namespace spool
