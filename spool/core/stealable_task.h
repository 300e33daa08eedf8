// A unit of work submitted to the shared executor that whoever waits for it
// first may run instead: Wait() runs it on the waiting thread when no worker
// has started it yet. So a thread waiting for its own queued work never
// depends on a free executor thread, and never deadlocks the pool, even when
// it is an executor task itself.
//
// Thread-safe. The work must not throw. Destroying the last handle of a task
// that never ran is fine: the queued closure holds its own reference and
// finds the task cancelled or done.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "spool/core/executor.h"
#include "spool/core/status.h"

namespace spool {

class StealableTask {
 public:
  // Queues `work` on `executor` (or, with a null executor, leaves it for
  // Wait() to run).
  static std::shared_ptr<StealableTask> Submit(Executor* executor, std::function<Status()> work);

  // Runs the work here if nobody started it, else waits for it; returns its
  // Status (Cancelled if Cancel() came first).
  Status Wait();
  // Prevents a queued run; waits for a running one. Returns its outcome.
  Status Cancel();

 private:
  enum class State { kQueued, kRunning, kDone };
  bool Claim();
  void RunClaimed();

  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kQueued;
  std::function<Status()> work_;
  Status result_;
};

}  // namespace spool
