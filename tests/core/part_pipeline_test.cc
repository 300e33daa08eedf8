#include "spool/core/part_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace spool {
namespace {

TEST(PartPipelineTest, SendsEveryPartAndReleasesTheBudget) {
  Executor executor(4);
  ByteBudget budget(1000);
  PartPipeline pipeline(executor, budget, {.max_in_flight = 3, .senders = 3}, "writing test");
  std::atomic<int> sent{0};
  for (int i = 0; i < 50; ++i) {
    Result<ByteBudget::Lease> lease = pipeline.Reserve(300);
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    ASSERT_TRUE(pipeline.Submit(std::move(*lease), [&] {
                  ++sent;
                  return OkStatus();
                }).ok());
  }
  ASSERT_TRUE(pipeline.Drain().ok());
  EXPECT_EQ(sent.load(), 50);
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_LE(budget.peak(), 1000u);
}

TEST(PartPipelineTest, OneSenderKeepsTheOrderAndTheCap) {
  Executor executor(4);
  ByteBudget budget(1 << 20);
  PartPipeline pipeline(executor, budget, {.max_in_flight = 2, .senders = 1}, "writing test");
  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  for (int i = 0; i < 40; ++i) {
    Result<ByteBudget::Lease> lease = pipeline.Reserve(10);
    ASSERT_TRUE(lease.ok());
    ASSERT_TRUE(pipeline.Submit(std::move(*lease), [&, i] {
                  const int now = ++running;
                  int previous = most.load();
                  while (now > previous && !most.compare_exchange_weak(previous, now)) {
                  }
                  {
                    std::lock_guard lock(mu);
                    order.push_back(i);
                  }
                  --running;
                  return OkStatus();
                }).ok());
  }
  ASSERT_TRUE(pipeline.Drain().ok());
  ASSERT_EQ(order.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_EQ(most.load(), 1);
}

TEST(PartPipelineTest, KeepsTheFirstErrorAndDropsLaterParts) {
  Executor executor(2);
  ByteBudget budget(1000);
  PartPipeline pipeline(executor, budget, {.max_in_flight = 4, .senders = 1}, "writing test");
  std::atomic<int> sent{0};
  Status submitted = OkStatus();
  for (int i = 0; i < 100 && submitted.ok(); ++i) {
    Result<ByteBudget::Lease> lease = pipeline.Reserve(10);
    if (!lease.ok()) {
      submitted = lease.status();
      break;
    }
    submitted = pipeline.Submit(std::move(*lease), [&, i] {
      ++sent;
      return i == 3 ? DataLossError("part 3 is bad") : OkStatus();
    });
  }
  Status drained = pipeline.Drain();
  EXPECT_EQ(drained.code(), StatusCode::kDataLoss);
  EXPECT_NE(drained.message().find("part 3 is bad"), std::string::npos);
  EXPECT_EQ(sent.load(), 4);  // one sender: parts 0..3, none after the error
  EXPECT_EQ(pipeline.Reserve(10).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(budget.in_use(), 0u);
}

// The writer runs on the only pool thread and the budget holds one part:
// each Reserve must run the queued part itself instead of blocking.
TEST(PartPipelineTest, AWriterOnTheOnlyPoolThreadDoesNotDeadlock) {
  Executor executor(1);
  ByteBudget budget(100);
  std::atomic<int> sent{0};
  TaskGroup group(executor);
  group.Submit([&]() -> Status {
    PartPipeline pipeline(executor, budget, {.max_in_flight = 4, .senders = 4}, "writing test");
    for (int i = 0; i < 20; ++i) {
      SPOOL_ASSIGN_OR_RETURN(ByteBudget::Lease lease, pipeline.Reserve(100));
      SPOOL_RETURN_IF_ERROR(pipeline.Submit(std::move(lease), [&] {
        ++sent;
        return OkStatus();
      }));
    }
    return pipeline.Drain();
  });
  ASSERT_TRUE(group.Wait().ok());
  EXPECT_EQ(sent.load(), 20);
  EXPECT_EQ(budget.in_use(), 0u);
}

// Budget held by someone else: Reserve sleeps until it comes back.
TEST(PartPipelineTest, ReserveWaitsForBytesReleasedElsewhere) {
  Executor executor(2);
  ByteBudget budget(100);
  auto held = std::make_shared<ByteBudget::Lease>(&budget, 100);
  PartPipeline pipeline(executor, budget, {}, "writing test");
  std::thread other([&] { held->Reset(); });
  Result<ByteBudget::Lease> lease = pipeline.Reserve(60);
  other.join();
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->bytes(), 60u);
  EXPECT_EQ(budget.in_use(), 60u);
}

TEST(PartPipelineTest, CancelStopsLaterReservesAndSubmits) {
  Executor executor(2);
  ByteBudget budget(1000);
  PartPipeline pipeline(executor, budget, {.max_in_flight = 2, .senders = 1}, "writing test");
  std::atomic<int> saw_cancel{0};
  ASSERT_TRUE(pipeline.Submit(ByteBudget::Lease(), [&] {
                if (CancelToken::Current().cancelled()) ++saw_cancel;
                return OkStatus();
              }).ok());
  ASSERT_TRUE(pipeline.Drain().ok());
  pipeline.Cancel();
  EXPECT_EQ(pipeline.Reserve(10).status().code(), StatusCode::kCancelled);
  EXPECT_EQ(pipeline.Submit(ByteBudget::Lease(), [] { return OkStatus(); }).code(), StatusCode::kCancelled);
  EXPECT_EQ(saw_cancel.load(), 0);
}

TEST(PartPipelineTest, TheCallersCancelStopsReserve) {
  Executor executor(2);
  ByteBudget budget(1000);
  CancelSource source;
  CancelScope scope(source.token());
  PartPipeline pipeline(executor, budget, {}, "writing test");
  source.Cancel();
  Result<ByteBudget::Lease> lease = pipeline.Reserve(10);
  EXPECT_EQ(lease.status().code(), StatusCode::kCancelled);
  EXPECT_NE(lease.status().message().find("writing test"), std::string::npos);
}

TEST(PartPipelineTest, WorksWhenTheExecutorIsShutDown) {
  Executor executor(2);
  executor.Shutdown();
  ByteBudget budget(1000);
  PartPipeline pipeline(executor, budget, {.max_in_flight = 2, .senders = 1}, "writing test");
  int sent = 0;
  for (int i = 0; i < 5; ++i) {
    Result<ByteBudget::Lease> lease = pipeline.Reserve(10);
    ASSERT_TRUE(lease.ok());
    ASSERT_TRUE(pipeline.Submit(std::move(*lease), [&] {
                  ++sent;
                  return OkStatus();
                }).ok());
  }
  ASSERT_TRUE(pipeline.Drain().ok());
  EXPECT_EQ(sent, 5);
}

}  // namespace
}  // namespace spool
