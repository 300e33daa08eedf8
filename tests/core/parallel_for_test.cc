#include "spool/core/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "spool/core/cancel.h"

namespace spool {
namespace {

TEST(ParallelForTest, RunsEveryIndexOnceWithAtMostTheGivenWorkers) {
  Executor executor(4);
  std::mutex mu;
  std::multiset<size_t> seen;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  Status status = ParallelFor(executor, 100, 3, [&](size_t i) {
    const int now = ++running;
    int previous = most.load();
    while (now > previous && !most.compare_exchange_weak(previous, now)) {
    }
    {
      std::lock_guard lock(mu);
      seen.insert(i);
    }
    --running;
    return OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(seen.size(), 100u);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
  EXPECT_LE(most.load(), 3);
}

TEST(ParallelForTest, StopsTakingIndicesAfterTheFirstErrorAndReturnsIt) {
  Executor executor(2);
  std::atomic<size_t> calls{0};
  Status status = ParallelFor(executor, 1000, 1, [&](size_t i) {
    ++calls;
    if (i == 5) return DataLossError("item 5 is bad");
    return OkStatus();
  });
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("item 5 is bad"), std::string::npos);
  EXPECT_EQ(calls.load(), 6u);  // one worker: items 0..5, nothing after the error
}

TEST(ParallelForTest, NothingToDoAndZeroWorkersStillRunEverything) {
  Executor executor(2);
  EXPECT_TRUE(ParallelFor(executor, 0, 4, [](size_t) { return InternalError("never called"); }).ok());
  std::atomic<size_t> calls{0};
  EXPECT_TRUE(ParallelFor(executor, 7, 0, [&](size_t) {
                ++calls;
                return OkStatus();
              }).ok());
  EXPECT_EQ(calls.load(), 7u);
}

TEST(ParallelForTest, TheCallingThreadIsOneOfTheWorkers) {
  Executor executor(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<size_t> elsewhere{0};
  EXPECT_TRUE(ParallelFor(executor, 20, 1, [&](size_t) {
                if (std::this_thread::get_id() != caller) ++elsewhere;
                return OkStatus();
              }).ok());
  EXPECT_EQ(elsewhere.load(), 0u);
}

TEST(ParallelForTest, ACancelStopsHandingOutIndices) {
  Executor executor(2);
  CancelSource source;
  CancelScope scope(source.token());
  std::atomic<size_t> calls{0};
  Status status = ParallelFor(executor, 1000, 1, [&](size_t i) {
    ++calls;
    if (i == 9) source.Cancel();
    return OkStatus();
  });
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_EQ(calls.load(), 10u);
}

}  // namespace
}  // namespace spool
