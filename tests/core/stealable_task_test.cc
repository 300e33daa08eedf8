#include "spool/core/stealable_task.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>

#include "spool/core/executor.h"

namespace spool {
namespace {

TEST(StealableTask, WaitRunsWorkThatNoWorkerStarted) {
  // With no executor nothing else can run it: Wait must, on this thread.
  const std::thread::id waiter = std::this_thread::get_id();
  std::thread::id ran_on;
  auto task = StealableTask::Submit(nullptr, [&] {
    ran_on = std::this_thread::get_id();
    return DataLossError("the work's own status");
  });
  const Status status = task->Wait();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(ran_on, waiter);
  EXPECT_EQ(task->Wait().code(), StatusCode::kDataLoss);  // a second wait returns the same outcome
}

TEST(StealableTask, AWaiterOnTheOnlyWorkerRunsItsOwnQueuedTask) {
  // The pool's one thread waits for a task queued behind it: without stealing
  // this would deadlock.
  Executor pool(1);
  std::atomic<int> ran{0};
  std::latch done(1);
  Status outer;
  pool.Submit([&] {
    auto inner = StealableTask::Submit(&pool, [&] {
      ran.fetch_add(1);
      return OkStatus();
    });
    outer = inner->Wait();
    done.count_down();
  });
  done.wait();
  EXPECT_TRUE(outer.ok()) << outer.ToString();
  pool.Shutdown();
  EXPECT_EQ(ran.load(), 1);  // the queued closure found it done and did not run it again
}

TEST(StealableTask, CancelPreventsAQueuedRun) {
  Executor pool(1);
  std::latch blocker_started(1), release(1);
  pool.Submit([&] {
    blocker_started.count_down();
    release.wait();
  });
  blocker_started.wait();  // the only worker is busy: the task stays queued
  std::atomic<bool> ran{false};
  auto task = StealableTask::Submit(&pool, [&] {
    ran = true;
    return OkStatus();
  });
  EXPECT_EQ(task->Cancel().code(), StatusCode::kCancelled);
  release.count_down();
  pool.Shutdown();
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(task->Wait().code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace spool
