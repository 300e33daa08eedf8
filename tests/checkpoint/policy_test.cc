#include "spool/checkpoint/policy.h"

#include <gtest/gtest.h>

namespace spool::checkpoint {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(SavePolicyTest, EveryNSteps) {
  SavePolicy policy{.every_n_steps = 100};
  auto t = std::chrono::steady_clock::time_point();
  EXPECT_FALSE(ShouldSaveStep(policy, 0, std::nullopt, t, t)) << "step 0: nothing trained yet";
  EXPECT_FALSE(ShouldSaveStep(policy, 99, std::nullopt, t, t));
  EXPECT_TRUE(ShouldSaveStep(policy, 100, std::nullopt, t, t));
  EXPECT_FALSE(ShouldSaveStep(policy, 100, 100, t, t)) << "never the step just saved";
  EXPECT_FALSE(ShouldSaveStep(policy, 150, 100, t, t));
  EXPECT_TRUE(ShouldSaveStep(policy, 203, 103, t, t)) << "a loop that skipped step 200 still saves";
}

TEST(SavePolicyTest, EveryDuration) {
  SavePolicy policy{.every_duration = seconds(600)};
  auto start = std::chrono::steady_clock::time_point();
  EXPECT_FALSE(ShouldSaveStep(policy, 7, std::nullopt, start, start + seconds(599)));
  EXPECT_TRUE(ShouldSaveStep(policy, 7, std::nullopt, start, start + seconds(600)));
  EXPECT_FALSE(ShouldSaveStep(policy, 0, std::nullopt, start, start + seconds(600))) << "step 0: nothing trained yet";
  EXPECT_FALSE(ShouldSaveStep(SavePolicy{}, 7, std::nullopt, start, start + hours(100))) << "no policy: never";
}

std::vector<RetentionCandidate> Series(int count, minutes spacing) {
  std::vector<RetentionCandidate> series;
  auto t0 = std::chrono::system_clock::time_point(hours(1000));
  for (int step = 1; step <= count; ++step) series.push_back({step, t0 + spacing * (step - 1)});
  return series;
}

TEST(RetentionTest, KeepsTheLastK) {
  EXPECT_EQ(StepsToDelete({.keep_last = 3}, Series(6, minutes(1))), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(StepsToDelete({.keep_last = 3}, Series(3, minutes(1))).empty());
  EXPECT_TRUE(StepsToDelete({.keep_last = 0}, Series(9, minutes(1))).empty()) << "0 keeps everything";
}

TEST(RetentionTest, KeepsOneEveryNHoursLikeTensorFlow) {
  // One checkpoint each 30 minutes; one per 2 hours is preserved: steps 1, 5, 9.
  RetentionPolicy policy{.keep_last = 2, .keep_every_duration = hours(2)};
  EXPECT_EQ(StepsToDelete(policy, Series(10, minutes(30))), (std::vector<int64_t>{2, 3, 4, 6, 7, 8}));
}

TEST(RetentionTest, KeepsOneEveryNSteps) {
  RetentionPolicy policy{.keep_last = 1, .keep_every_n_steps = 4};
  EXPECT_EQ(StepsToDelete(policy, Series(10, minutes(1))), (std::vector<int64_t>{2, 3, 4, 6, 7, 8}));
}

TEST(RetentionTest, DecisionsDoNotChangeAsCheckpointsArrive) {
  RetentionPolicy policy{.keep_last = 2, .keep_every_duration = hours(1), .keep_every_n_steps = 7};
  auto all = Series(40, minutes(13));
  std::vector<RetentionCandidate> present;
  for (const auto& next : all) {
    present.push_back(next);
    std::vector<int64_t> doomed = StepsToDelete(policy, present);
    std::erase_if(present, [&](const RetentionCandidate& c) {
      return std::find(doomed.begin(), doomed.end(), c.step) != doomed.end();
    });
  }
  // Deleting as we go gives the same survivors as deciding once at the end.
  std::vector<int64_t> once = StepsToDelete(policy, all);
  std::vector<int64_t> survivors_once;
  for (const auto& c : all) {
    if (std::find(once.begin(), once.end(), c.step) == once.end()) survivors_once.push_back(c.step);
  }
  std::vector<int64_t> survivors_incremental;
  for (const auto& c : present) survivors_incremental.push_back(c.step);
  EXPECT_EQ(survivors_incremental, survivors_once);
  EXPECT_EQ(survivors_incremental.back(), 40);
}

}  // namespace
}  // namespace spool::checkpoint
