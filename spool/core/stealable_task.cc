#include "spool/core/stealable_task.h"

namespace spool {

std::shared_ptr<StealableTask> StealableTask::Submit(Executor* executor, std::function<Status()> work) {
  auto task = std::make_shared<StealableTask>();
  task->work_ = std::move(work);
  if (executor != nullptr) {
    executor->Submit([task] {
      if (task->Claim()) task->RunClaimed();
    });
  }
  return task;
}

bool StealableTask::Claim() {
  std::lock_guard lock(mu_);
  if (state_ != State::kQueued) return false;
  state_ = State::kRunning;
  return true;
}

void StealableTask::RunClaimed() {
  Status result = work_();
  std::lock_guard lock(mu_);
  work_ = nullptr;  // drop what the work captured as soon as it is done
  result_ = std::move(result);
  state_ = State::kDone;
  cv_.notify_all();
}

Status StealableTask::Wait() {
  if (Claim()) RunClaimed();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return state_ == State::kDone; });
  return result_;
}

Status StealableTask::Cancel() {
  std::unique_lock lock(mu_);
  if (state_ == State::kQueued) {
    state_ = State::kDone;
    result_ = CancelledError("cancelled before it started");
    work_ = nullptr;
    return result_;
  }
  cv_.wait(lock, [&] { return state_ == State::kDone; });
  return result_;
}

}  // namespace spool
