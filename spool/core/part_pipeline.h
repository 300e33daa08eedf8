// PartPipeline: the sending side of a multipart or resumable upload.
//
// A writer reserves budget for a part buffer (Reserve), fills it, and hands
// it over with the lease that pays for it and the function that sends it
// (Submit). The pipeline runs the sends on the executor, in the order they
// were submitted, by at most `senders` tasks at once (1: each part starts
// after the previous one finished, as a GCS resumable session needs), with at
// most `max_in_flight` parts handed over and not yet done. A part's buffer
// and lease are released as soon as its send returns.
//
// Never deadlocks the pool, even when the writer is itself a pool task:
// whenever the writer must wait (for budget, for a free slot, for the parts
// to finish) it runs queued executor tasks, and when there are none it
// sleeps on a condition variable signalled when a part finishes or bytes
// of the budget come back; nothing polls.
//
// Errors: the first failed send is kept; parts not yet started are then
// dropped, and Reserve, Submit and Drain return that error from then on.
// Cancellation: the sends run under the pipeline's own CancelSource, a
// child of the token current at construction; Cancel() stops them (a request
// in flight within about a second). Reserve and Submit fail with Cancelled
// once that token, or the caller's current one, is cancelled.
//
// Threading and lifetime: Reserve, Submit, Drain and Cancel are called by the
// one writer thread that owns the pipeline; the sends run on executor
// threads (or on the writer's thread while it helps). Destruction cancels
// and drains, so no send runs afterwards, but the owner should Cancel and
// Drain itself before destroying what its send functions use.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "spool/core/cancel.h"
#include "spool/core/executor.h"
#include "spool/core/status.h"

namespace spool {

class PartPipeline {
 public:
  struct Options {
    int max_in_flight = 4;  // parts handed over and not yet done (at least 1)
    int senders = 4;        // parts sent at once (at least 1, at most max_in_flight)
  };

  // `name` says what is being written, for messages ("writing s3://b/key").
  PartPipeline(Executor& executor, ByteBudget& budget, Options options, std::string name);
  ~PartPipeline();
  PartPipeline(const PartPipeline&) = delete;
  PartPipeline& operator=(const PartPipeline&) = delete;

  // Takes `bytes` (clamped to the budget's capacity) for the next part
  // buffer. Call it holding no other lease of the budget: this pipeline's
  // parts in flight, or other users, give bytes back for it.
  Result<ByteBudget::Lease> Reserve(uint64_t bytes);

  // Waits for a free slot, then queues `send` (which owns the part's bytes)
  // with the part's lease. Returns the first error instead when a part
  // failed; the part is then dropped.
  Status Submit(ByteBudget::Lease lease, std::function<Status()> send);

  // Waits until every part handed over is done; returns the first error.
  Status Drain();

  // Stops the sends (idempotent); Drain() still has to be called to wait.
  void Cancel();

  Status first_error() const;

 private:
  struct Part {
    std::function<Status()> send;
    ByteBudget::Lease lease;
  };

  // One sender task: sends queued parts until none is left or one failed.
  void SendQueued();
  // Blocks until `done()` (checked under mu_), running queued executor
  // tasks meanwhile.
  template <typename Done>
  void HelpUntil(Done done);
  Status CheckCancel() const;

  Executor& executor_;
  ByteBudget& budget_;
  const Options options_;
  const std::string name_;
  CancelSource cancel_;  // the sends'

  mutable std::mutex mu_;
  std::condition_variable changed_;  // a part finished, or a sender ended
  std::deque<Part> queued_;          // handed over, not yet started
  int in_flight_ = 0;                // handed over and not done: queued or sending
  int senders_ = 0;                  // sender tasks submitted and not ended
  Status first_error_;
};

}  // namespace spool
