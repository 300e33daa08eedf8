// Cancellation tokens, scopes, and how the executor and the retry loop carry
// them. No timing assertions: a cancel that did not wake a sleeper would
// hang the test until ctest's timeout.
#include "spool/core/cancel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <mutex>
#include <thread>

#include "spool/core/executor.h"
#include "spool/core/retry.h"

namespace spool {
namespace {

using namespace std::chrono_literals;

TEST(CancelTest, WithoutAScopeTheCurrentTokenIsTheProcessTokenAndNotCancelled) {
  EXPECT_FALSE(CancelToken::Current().cancelled());
  EXPECT_FALSE(CancelToken::Process().cancelled());
  EXPECT_TRUE(CancelToken::Current().Check("anything").ok());
}

TEST(CancelTest, CancelReachesChildrenButNotParents) {
  CancelSource parent;
  CancelSource child(parent.token());
  CancelSource grandchild(child.token());
  child.Cancel();
  EXPECT_FALSE(parent.cancelled());
  EXPECT_TRUE(child.cancelled());
  EXPECT_TRUE(grandchild.cancelled());

  CancelSource other;
  CancelSource other_child(other.token());
  other.Cancel();
  EXPECT_TRUE(other_child.cancelled());
}

TEST(CancelTest, CheckNamesTheWorkAndIsCancelled) {
  CancelSource source;
  source.Cancel();
  Status status = source.token().Check("GET s3://b/k");
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_EQ(status.message(), "GET s3://b/k: cancelled");
}

TEST(CancelTest, ScopesNestAndRestoreThePreviousToken) {
  CancelSource outer;
  CancelSource inner;
  inner.Cancel();
  {
    CancelScope outer_scope(outer.token());
    EXPECT_FALSE(CancelToken::Current().cancelled());
    {
      CancelScope inner_scope(inner.token());
      EXPECT_TRUE(CancelToken::Current().cancelled());
    }
    EXPECT_FALSE(CancelToken::Current().cancelled());
    outer.Cancel();
    EXPECT_TRUE(CancelToken::Current().cancelled());
    {
      // Cleanup runs under the process token, whatever the caller's state.
      CancelScope cleanup(CancelToken::Process());
      EXPECT_FALSE(CancelToken::Current().cancelled());
    }
  }
  EXPECT_FALSE(CancelToken::Current().cancelled());
}

TEST(CancelTest, ANewSourceDefaultsToTheCurrentTokenAsParent) {
  CancelSource outer;
  CancelScope scope(outer.token());
  CancelSource made_inside;
  outer.Cancel();
  EXPECT_TRUE(made_inside.cancelled());
}

TEST(CancelTest, CancelWakesASleeperOnAnotherThread) {
  CancelSource source;
  std::promise<bool> woke;
  std::thread sleeper([&] { woke.set_value(source.token().SleepFor(std::chrono::hours(1))); });
  // Give the sleeper a moment to start waiting; correctness does not depend on it.
  std::this_thread::sleep_for(20ms);
  source.Cancel();
  EXPECT_FALSE(woke.get_future().get());  // false: cut short by the cancel
  sleeper.join();
}

TEST(CancelTest, SleepForRunsItsCourseWhenNotCancelled) {
  CancelSource source;
  EXPECT_TRUE(source.token().SleepFor(1ms));
}

TEST(CancelTest, ADeadlineCancelsFromThenOn) {
  CancelSource source;
  source.CancelAt(std::chrono::steady_clock::now() - 1ms);
  EXPECT_TRUE(source.cancelled());

  CancelSource later;
  later.CancelAt(std::chrono::steady_clock::now() + std::chrono::hours(1));
  EXPECT_FALSE(later.cancelled());
}

TEST(CancelTest, ASleepEndsAtTheDeadlineOfAnyAncestor) {
  CancelSource parent;
  parent.CancelAt(std::chrono::steady_clock::now() + 50ms);
  CancelSource child(parent.token());
  // Would hang for an hour if the sleep ignored the parent's deadline.
  EXPECT_FALSE(child.token().SleepFor(std::chrono::hours(1)));
  EXPECT_TRUE(child.cancelled());
}

TEST(CancelTest, ExecutorTasksRunUnderTheSubmittersToken) {
  std::latch cancelled(1);  // outlives the executor: a worker waits on it
  std::promise<bool> seen_before, seen_after;
  Executor executor(2);
  CancelSource source;
  {
    CancelScope scope(source.token());
    executor.Submit([&] {
      seen_before.set_value(CancelToken::Current().cancelled());
      cancelled.wait();
      seen_after.set_value(CancelToken::Current().cancelled());
    });
  }
  EXPECT_FALSE(seen_before.get_future().get());
  source.Cancel();
  cancelled.count_down();
  EXPECT_TRUE(seen_after.get_future().get());
  // A task submitted outside any scope is not affected.
  std::promise<bool> unrelated;
  executor.Submit([&] { unrelated.set_value(CancelToken::Current().cancelled()); });
  EXPECT_FALSE(unrelated.get_future().get());
}

TEST(CancelTest, TaskGroupHelpersRunTasksUnderTheirOwnTokens) {
  // Wait() may run a queued task on the waiting thread: it must see the
  // task's token, not the waiter's.
  std::latch started(1), hold(1);  // outlive the executor: its worker waits on them
  Executor executor(1);
  executor.Submit([&] {  // keeps the only worker busy
    started.count_down();
    hold.wait();
  });
  started.wait();
  CancelSource cancelled_source;
  cancelled_source.Cancel();
  TaskGroup group(executor);
  std::atomic<bool> saw_cancelled{false};
  {
    CancelScope scope(cancelled_source.token());
    group.Submit([&] {
      saw_cancelled = CancelToken::Current().cancelled();
      return OkStatus();
    });
  }
  EXPECT_FALSE(CancelToken::Current().cancelled());
  EXPECT_TRUE(group.Wait().ok());  // runs the task here
  EXPECT_TRUE(saw_cancelled);
  EXPECT_FALSE(CancelToken::Current().cancelled());
  hold.count_down();
}

TEST(CancelTest, RetryMakesNoFurtherAttemptOnceCancelled) {
  CancelSource source;
  CancelScope scope(source.token());
  int attempts = 0;
  RetryEnvironment env;
  env.sleep = [](std::chrono::milliseconds) {};
  Status status = Retry(RetryPolicy{}, Idempotency::kIdempotent, "GET x", [&]() -> Status {
    ++attempts;
    source.Cancel();  // the owner gives up while this attempt fails
    return UnavailableError("connection reset");
  }, env);
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
}

TEST(CancelTest, TheDefaultBackoffSleepEndsOnCancel) {
  CancelSource source;
  CancelScope scope(source.token());
  RetryPolicy policy;
  policy.initial_backoff = std::chrono::hours(1);  // would hang without the cancel
  policy.max_backoff = std::chrono::hours(1);
  policy.max_elapsed = std::chrono::hours(10);
  RetryEnvironment env;
  env.uniform01 = [] { return 0.999; };
  std::thread canceller([&] {
    std::this_thread::sleep_for(20ms);
    source.Cancel();
  });
  int attempts = 0;
  Status status = Retry(policy, Idempotency::kIdempotent, "GET x", [&]() -> Status {
    ++attempts;
    return UnavailableError("503");
  }, env);
  canceller.join();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_LE(attempts, 2);
}

TEST(ExecutorShutdownTest, TasksSubmittedWhileWorkersDrainAreQueuedNotRunInline) {
  // A task submitting more work while holding a lock the new work needs (as
  // the loader does) must not deadlock during shutdown.
  std::mutex mu;
  std::latch first_running(1), shutdown_started(1);
  std::promise<void> second_ran;
  Executor executor(1);
  executor.Submit([&] {
    first_running.count_down();
    shutdown_started.wait();
    std::lock_guard lock(mu);
    executor.Submit([&] {
      std::lock_guard inner(mu);  // would self-deadlock if run inline
      second_ran.set_value();
    });
  });
  first_running.wait();
  std::thread stopper([&] { EXPECT_TRUE(executor.Shutdown()); });
  std::this_thread::sleep_for(20ms);  // let Shutdown set stopping; correctness does not depend on it
  shutdown_started.count_down();
  second_ran.get_future().get();
  stopper.join();
}

TEST(ExecutorShutdownTest, TasksSubmittedAfterShutdownRunOnTheCaller) {
  Executor executor(2);
  EXPECT_TRUE(executor.Shutdown());
  std::thread::id ran_on;
  executor.Submit([&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(ExecutorShutdownTest, ShutdownRunsEveryQueuedTask) {
  Executor executor(1);
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) executor.Submit([&] { ++ran; });
  EXPECT_TRUE(executor.Shutdown());
  EXPECT_EQ(ran.load(), 50);
}

TEST(ExecutorShutdownTest, ABoundedShutdownReturnsWhileATaskIsStuckAndCanWaitAgain) {
  std::latch release(1);
  Executor executor(1);
  executor.Submit([&] { release.wait(); });
  EXPECT_FALSE(executor.Shutdown(20ms));
  release.count_down();
  EXPECT_TRUE(executor.Shutdown());
}

TEST(CancelTest, UnscopedWorkIsNotCleanup) {
  // Made without a scope, a source descends from the work token, which exit
  // cancels first; cleanup scopes use the process token, cancelled last.
  CancelSource unscoped;
  CancelSource cleanup(CancelToken::Process());
  EXPECT_FALSE(unscoped.cancelled());
  EXPECT_FALSE(cleanup.cancelled());
}

}  // namespace
}  // namespace spool
