// The one place reads are split into parts: part boundaries, the bound on
// parts in flight, and the short-read error every store returns.
#include "spool/core/storage/ranged_reads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace spool {
namespace {

TEST(RangedReads, SplitsIntoConsecutivePartsOfThePartSize) {
  Executor executor(4);
  std::string buffer(25, '\0');
  std::mutex mu;
  std::vector<std::pair<uint64_t, size_t>> parts;
  Status status = ReadInParts(executor, {10, 3}, 100, buffer, [&](uint64_t at, std::span<char> part) {
    std::fill(part.begin(), part.end(), static_cast<char>('a' + (at - 100) / 10));
    std::lock_guard lock(mu);
    parts.emplace_back(at, part.size());
    return OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status.ToString();
  std::sort(parts.begin(), parts.end());
  EXPECT_EQ(parts, (std::vector<std::pair<uint64_t, size_t>>{{100, 10}, {110, 10}, {120, 5}}));
  EXPECT_EQ(buffer, std::string(10, 'a') + std::string(10, 'b') + std::string(5, 'c'));
  EXPECT_EQ(PartCount({10, 3}, 25), 3u);
  EXPECT_EQ(PartCount({10, 3}, 0), 0u);
}

TEST(RangedReads, OnePartRunsOnTheCallingThread) {
  Executor executor(2);
  std::string buffer(10, '\0');
  std::thread::id ran_on;
  ASSERT_TRUE(ReadInParts(executor, {10, 4}, 0, buffer, [&](uint64_t, std::span<char>) {
                ran_on = std::this_thread::get_id();
                return OkStatus();
              }).ok());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(RangedReads, AtMostPartsInFlightAtOnce) {
  Executor executor(8);
  std::string buffer(64, '\0');
  std::atomic<int> now{0}, most{0};
  ASSERT_TRUE(ReadInParts(executor, {4, 3}, 0, buffer, [&](uint64_t, std::span<char>) {
                const int current = ++now;
                int seen = most.load();
                while (current > seen && !most.compare_exchange_weak(seen, current)) {
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                --now;
                return OkStatus();
              }).ok());
  EXPECT_LE(most.load(), 3);
}

TEST(RangedReads, TheFirstErrorIsReturned) {
  Executor executor(2);
  std::string buffer(40, '\0');
  Status status = ReadInParts(executor, {10, 2}, 0, buffer, [](uint64_t at, std::span<char> part) {
    return at == 20 ? ShortReadError("mem://b/k", at, 3, part.size()) : OkStatus();
  });
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
}

TEST(RangedReads, AShortReadIsDataLossThatSaysToReadAgain) {
  Status status = ShortReadError("s3://bucket/key", 1024, 100, 512);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("s3://bucket/key"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("1024"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("read it again"), std::string::npos) << status.ToString();
}

}  // namespace
}  // namespace spool
