// The pure parts of the record order: shard plans, interleave, shuffle,
// replay, and the state's text form.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "spool/records/loader/interleave.h"
#include "spool/records/loader/loader_state.h"
#include "spool/records/loader/plan.h"
#include "spool/records/loader/record_order.h"
#include "spool/records/loader/shuffle_buffer.h"

namespace spool::loader {
namespace {

// (shard, record) pairs of a plan, given the shards' real counts.
std::vector<std::pair<uint32_t, uint64_t>> Expand(const std::vector<Segment>& plan,
                                                  const std::vector<uint64_t>& counts) {
  std::vector<std::pair<uint32_t, uint64_t>> records;
  for (const Segment& s : plan) {
    for (uint64_t r = s.begin; r < s.end.value_or(counts[s.shard]); ++r) records.emplace_back(s.shard, r);
  }
  return records;
}

TEST(Plan, ShardOrderIsAPermutationThatDependsOnSeedAndEpoch) {
  auto a = EpochShardOrder(50, 7, 0, true);
  EXPECT_EQ(a, EpochShardOrder(50, 7, 0, true));
  EXPECT_NE(a, EpochShardOrder(50, 7, 1, true));
  EXPECT_NE(a, EpochShardOrder(50, 8, 0, true));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, EpochShardOrder(50, 7, 0, false));
}

TEST(Plan, RecordRangesCoverEveryRecordOnceAndBalanceWorkers) {
  const std::vector<uint64_t> counts = {17, 3, 0, 41, 9, 1, 25, 1000};
  std::vector<std::optional<uint64_t>> known(counts.begin(), counts.end());
  for (uint64_t workers : {1, 2, 3, 8, 13, 100}) {
    for (uint64_t epoch : {0, 1}) {
      std::set<std::pair<uint32_t, uint64_t>> seen;
      std::vector<size_t> sizes;
      for (uint64_t w = 0; w < workers; ++w) {
        auto plan = PlanWorkerEpoch(known, 3, epoch, true, w, workers);
        ASSERT_TRUE(plan.ok());
        auto records = Expand(*plan, counts);
        sizes.push_back(records.size());
        for (auto& r : records) EXPECT_TRUE(seen.insert(r).second) << "record delivered twice";
      }
      EXPECT_EQ(seen.size(), 1096u);
      auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
      EXPECT_LE(*hi - *lo, 1u) << workers << " workers";
    }
  }
}

TEST(Plan, WholeShardsRoundRobinWithoutCounts) {
  std::vector<std::optional<uint64_t>> unknown(7);
  std::set<uint32_t> seen;
  for (uint64_t w = 0; w < 3; ++w) {
    auto plan = PlanWorkerEpoch(unknown, 3, 0, true, w, 3);
    ASSERT_TRUE(plan.ok());
    for (const Segment& s : *plan) {
      EXPECT_EQ(s.begin, 0u);
      EXPECT_FALSE(s.end.has_value());
      EXPECT_TRUE(seen.insert(s.shard).second);
    }
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(PlanWorkerEpoch(unknown, 3, 0, true, 0, 8).status().code(), StatusCode::kInvalidArgument);
}

TEST(Interleave, TakesBlocksInTurnAndRefillsEndedPlaces) {
  // Segments of lengths 3, 1, 4, 2 with cycle 2, block 2.
  const std::vector<uint64_t> lengths = {3, 1, 4, 2};
  InterleaveSchedule schedule(lengths.size(), 2, 2);
  std::vector<uint64_t> taken(lengths.size());
  std::vector<std::string> order;
  while (auto segment = schedule.Current()) {
    if (taken[*segment] == lengths[*segment]) {
      schedule.Ended();
      continue;
    }
    order.push_back(std::to_string(*segment) + ":" + std::to_string(taken[*segment]++));
    schedule.Took();
  }
  const std::vector<std::string> expected = {"0:0", "0:1", "1:0", "0:2", "2:0", "2:1", "3:0", "3:1", "2:2", "2:3"};
  EXPECT_EQ(order, expected);
}

TEST(Shuffle, IsAPermutationAndSeeded) {
  auto run = [](uint64_t seed, uint64_t capacity) {
    ShuffleBuffer<int> shuffle(capacity, seed);
    std::vector<int> out;
    int next = 0;
    while (true) {
      while (shuffle.WantsInput() && next < 100) shuffle.Push(next++);
      if (!shuffle.CanPop(next == 100)) break;
      out.push_back(shuffle.Pop());
    }
    return out;
  };
  auto a = run(1, 10);
  EXPECT_EQ(a, run(1, 10));
  EXPECT_NE(a, run(2, 10));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
  auto passthrough = run(1, 1);
  EXPECT_TRUE(std::is_sorted(passthrough.begin(), passthrough.end()));
}

// The live order (on values) and the replay (on references) agree.
TEST(Replay, MatchesTheLiveOrderAtEveryPoint) {
  const std::vector<uint64_t> lengths = {5, 0, 12, 1, 7, 9};
  const uint64_t total = 34;
  auto live = [&]() {
    InterleaveSchedule schedule(lengths.size(), 3, 2);
    ShuffleBuffer<RecordRef> shuffle(6, 99);
    std::vector<uint64_t> taken(lengths.size());
    bool ended = false;
    std::vector<std::pair<uint32_t, uint64_t>> out;
    RecordRef ref;
    auto pull = [&](size_t s, ShuffleBuffer<RecordRef>& b) {
      if (taken[s] == lengths[s]) return Pull::kEnded;
      b.Push(RecordRef{static_cast<uint32_t>(s), taken[s]++});
      return Pull::kTaken;
    };
    while (NextInOrder(schedule, shuffle, ended, pull, &ref) == Step::kRecord) out.emplace_back(ref.segment, ref.index);
    return out;
  }();
  ASSERT_EQ(live.size(), total);
  auto length = [&](size_t s) -> Result<uint64_t> { return lengths[s]; };
  for (uint64_t p = 0; p <= total; ++p) {
    auto point = ReplayOrder(lengths.size(), 3, 2, 6, 99, p, length);
    ASSERT_TRUE(point.ok());
    // Continue from the replayed point and compare the rest.
    InterleaveSchedule schedule = point->schedule;
    ShuffleBuffer<RecordRef> shuffle(6, 0);
    shuffle.set_rng_state(point->shuffle_rng_state);
    for (auto& ref : point->buffered) shuffle.Push(ref);
    std::vector<uint64_t> taken = point->taken;
    taken.resize(lengths.size());
    bool ended = point->input_ended;
    auto pull = [&](size_t s, ShuffleBuffer<RecordRef>& b) {
      if (taken[s] == lengths[s]) return Pull::kEnded;
      b.Push(RecordRef{static_cast<uint32_t>(s), taken[s]++});
      return Pull::kTaken;
    };
    RecordRef ref;
    std::vector<std::pair<uint32_t, uint64_t>> rest;
    while (NextInOrder(schedule, shuffle, ended, pull, &ref) == Step::kRecord) rest.emplace_back(ref.segment, ref.index);
    using Refs = std::vector<std::pair<uint32_t, uint64_t>>;
    EXPECT_EQ(rest, Refs(live.begin() + static_cast<long>(p), live.end())) << "at " << p;
  }
  EXPECT_EQ(ReplayOrder(lengths.size(), 3, 2, 6, 99, total + 1, length).status().code(), StatusCode::kOutOfRange);
}

TEST(LoaderStateText, RoundTripsAndRejectsGarbage) {
  LoaderState state;
  state.seed = 7;
  state.epoch = 2;
  state.position = 1536;
  state.worker = 3;
  state.workers = 8;
  EXPECT_EQ(state.Encode(), "spool-loader/1 seed=7 epoch=2 position=1536 worker=3 workers=8");
  state.truncated = {{4, 100}, {9, 0}};
  auto decoded = LoaderState::Decode(state.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, state);
  for (const char* bad : {"", "spool-loader/2 seed=1", "spool-loader/1 seed=1 epoch=0 position=0 worker=0",
                          "spool-loader/1 seed=x epoch=0 position=0 worker=0 workers=1",
                          "spool-loader/1 seed=1 epoch=0 position=0 worker=2 workers=1",
                          "spool-loader/1 seed=1 epoch=0 position=0 worker=0 workers=1 truncated=4"}) {
    EXPECT_EQ(LoaderState::Decode(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace spool::loader
