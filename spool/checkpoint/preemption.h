// PreemptionNotice: knowing that the job is about to be stopped, and by when.
//
// Kubernetes stops a pod (preemption, eviction, node drain, spot reclaim) by
// sending SIGTERM and, after terminationGracePeriodSeconds (30 s by
// default), SIGKILL. A training loop that installs the notice checks
// requested() at each step boundary; once it is set, it saves a checkpoint
// with CheckpointManager::SaveBeforeDeadline(step, ..., notice.deadline())
// and exits, and the restarted job resumes from that step.
//
//   auto& notice = spool::checkpoint::PreemptionNotice::Install(std::chrono::seconds(30));
//   while (training) {
//     TrainStep();
//     if (notice.requested()) {
//       loader->PausePrefetch(true);  // the save gets the network and the CPU
//       auto saved = manager->SaveBeforeDeadline(step, source, metadata, notice.deadline());
//       LogOutcome(saved);
//       return 143;  // 128 + SIGTERM, committed or not: a restartable failure, so the
//                    // job controller starts the pod again (exit 0 would end the Job)
//     }
//   }
//
// The handler only records the signal and its time (both async-signal-safe);
// nothing else runs in signal context. One notice per process.
//
// Threading: every method may be called from any thread; Request() also from
// a signal handler of the caller's own.
#pragma once

#include <chrono>
#include <initializer_list>

#include "spool/core/status.h"

namespace spool::checkpoint {

class PreemptionNotice {
 public:
  // The process's notice. Without Install() it is only set by Request().
  static PreemptionNotice& Get();

  // Records `signals` (SIGTERM by default) as a notice whose deadline is
  // their arrival plus `grace` minus `margin` (time kept for exiting after
  // the save). A second signal of the same kind keeps the first arrival.
  // Returns Get(). Calling it again replaces grace, margin and signals.
  static PreemptionNotice& Install(std::chrono::seconds grace,
                                   std::chrono::seconds margin = std::chrono::seconds(5),
                                   std::initializer_list<int> signals = {15 /* SIGTERM */});

  // Sets the notice now, as the signal would (for a loop with its own
  // handler, a scheduler's API, or tests). Async-signal-safe.
  void Request();

  bool requested() const;
  // The signal that set the notice; 0 when Request() did, or not set.
  int signal() const;
  // When the save must have committed: arrival + grace - margin. Far in the
  // future when not requested.
  std::chrono::steady_clock::time_point deadline() const;
  std::chrono::seconds grace() const;

  // Forgets a notice (for tests and for loops that decide to go on).
  void Clear();

 private:
  PreemptionNotice() = default;
};

}  // namespace spool::checkpoint
