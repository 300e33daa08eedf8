#include "spool/core/part_pipeline.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace spool {

PartPipeline::PartPipeline(Executor& executor, ByteBudget& budget, Options options, std::string name)
    : executor_(executor), budget_(budget), options_(options), name_(std::move(name)) {}

PartPipeline::~PartPipeline() {
  Cancel();
  Drain().IgnoreError();
}

Status PartPipeline::first_error() const {
  std::lock_guard lock(mu_);
  return first_error_;
}

Status PartPipeline::CheckCancel() const {
  SPOOL_RETURN_IF_ERROR(cancel_.token().Check(name_));
  return CancelToken::Current().Check(name_);
}

void PartPipeline::Cancel() { cancel_.Cancel(); }

template <typename Done>
void PartPipeline::HelpUntil(Done done) {
  std::unique_lock lock(mu_);
  while (!done()) {
    lock.unlock();
    // The queued task may be one of our senders, or one that a sender (or
    // whatever holds the budget) is waiting for.
    const bool ran = executor_.RunOne();
    lock.lock();
    // Nothing queued: our senders are running elsewhere and will signal.
    if (!ran) changed_.wait(lock, done);
  }
}

Result<ByteBudget::Lease> PartPipeline::Reserve(uint64_t bytes) {
  for (;;) {
    SPOOL_RETURN_IF_ERROR(first_error());
    SPOOL_RETURN_IF_ERROR(CheckCancel());
    // Read before trying, so that a release between the try and the wait
    // still wakes us.
    const uint64_t seen = budget_.changes();
    std::optional<ByteBudget::Lease> lease = ByteBudget::Lease::TryAcquire(budget_, bytes);
    if (lease) return std::move(*lease);
    // Blocking in Acquire here could wait for parts queued behind this very
    // thread; run them instead, and sleep only when there is nothing to run.
    if (executor_.RunOne()) continue;
    // Our parts release their leases when done (after recording any error),
    // so a finished part wakes this wait too.
    budget_.WaitForChange(seen);
  }
}

Status PartPipeline::Submit(ByteBudget::Lease lease, std::function<Status()> send) {
  SPOOL_RETURN_IF_ERROR(CheckCancel());
  const int limit = std::max(options_.max_in_flight, 1);
  HelpUntil([&] { return in_flight_ < limit || !first_error_.ok(); });
  bool start_sender = false;
  {
    std::lock_guard lock(mu_);
    if (!first_error_.ok()) return first_error_;
    queued_.push_back(Part{std::move(send), std::move(lease)});
    ++in_flight_;
    if (senders_ < std::clamp(options_.senders, 1, limit)) {
      ++senders_;
      start_sender = true;
    }
  }
  // Submitted without holding mu_: an executor that is shutting down runs
  // the task right here.
  if (start_sender) {
    CancelScope scope(cancel_.token());
    executor_.Submit([this] { SendQueued(); });
  }
  return OkStatus();
}

void PartPipeline::SendQueued() {
  std::unique_lock lock(mu_);
  while (!queued_.empty() && first_error_.ok()) {
    Part part = std::move(queued_.front());
    queued_.pop_front();
    lock.unlock();
    Status status = part.send();
    std::deque<Part> dropped;
    if (!status.ok()) {
      lock.lock();
      if (first_error_.ok()) first_error_ = std::move(status);
      dropped.swap(queued_);
      lock.unlock();
    }
    // The buffers and leases go before the parts count as done, so that
    // Drain() returning means every byte is back; a Reserve waiting for the
    // budget wakes here and sees any error recorded above.
    part = Part();
    const int finished = 1 + static_cast<int>(dropped.size());
    dropped.clear();
    lock.lock();
    in_flight_ -= finished;
    changed_.notify_all();
  }
  --senders_;
  // Notified under the lock: once it is released, Drain() may return and
  // the pipeline be destroyed.
  changed_.notify_all();
}

Status PartPipeline::Drain() {
  HelpUntil([&] { return in_flight_ == 0 && senders_ == 0; });
  std::lock_guard lock(mu_);
  return first_error_;
}

}  // namespace spool
