// Elastic mode (DataLoaderOptions::partitions): the job's global batches do
// not depend on how many workers it has, and a state saved at one world size
// resumes at another delivering every remaining record of the epoch once.
// Part of the loader suite: runs on the memory and local stores and on Ceph
// RGW.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spool/records/loader/data_loader.h"
#include "tests/loader/loader_suite.h"
#include "tests/loader/test_dataset.h"

namespace spool::testing {
using loader::DataLoader;
using loader::DataLoaderOptions;
using loader::LoaderState;

namespace {

using GlobalBatch = std::vector<std::string>;

constexpr uint64_t kPartitions = 12;

// Uneven shards (an empty one, a one-record one): 139 records.
Dataset WriteElasticDataset(ObjectStore& store, const std::string& prefix) {
  DatasetSpec spec{prefix + "/elastic", {17, 3, 0, 41, 9, 1, 25, 13, 30}};
  spec.write_manifest = true;
  auto dataset = WriteDataset(store, spec);
  EXPECT_TRUE(dataset.ok()) << dataset.status().ToString();
  return dataset.ok() ? *dataset : Dataset{};
}

DataLoaderOptions ElasticOptions(const std::shared_ptr<ObjectStore>& store, const Dataset& dataset) {
  DataLoaderOptions options;
  options.store = store;
  options.inputs = {dataset.manifest_key};
  options.seed = 5;
  options.partitions = kPartitions;
  options.global_batch_size = 24;  // 2 records per partition per step
  options.shuffle_buffer = 8;
  options.interleave = 2;
  options.epochs = 2;
  options.memory_budget = 32 << 20;
  options.read_ahead = 64 << 10;
  options.fetch_chunk = 4 << 10;
  return options;
}

// A job of `world` ranks with `local` loaders each, every one resumed from
// `state` when given (as each rank would after a restart).
std::vector<std::unique_ptr<DataLoader>> OpenJob(const DataLoaderOptions& options, int world, int local = 1,
                                                 const std::optional<LoaderState>& state = std::nullopt) {
  std::vector<std::unique_ptr<DataLoader>> job;
  for (int rank = 0; rank < world; ++rank) {
    for (int local_worker = 0; local_worker < local; ++local_worker) {
      DataLoaderOptions mine = options;
      mine.rank = rank;
      mine.world_size = world;
      mine.local_workers = local;
      mine.local_worker = local_worker;
      auto loader = DataLoader::Open(mine);
      EXPECT_TRUE(loader.ok()) << loader.status().ToString();
      if (!loader.ok()) return {};
      if (state) {
        Status resumed = (*loader)->Resume(*state);
        EXPECT_TRUE(resumed.ok()) << resumed.ToString();
      }
      job.push_back(std::move(loader).value());
    }
  }
  return job;
}

// One step of the whole job: every worker's batch, in worker order.
// nullopt once every worker is done; all workers must agree on that.
std::optional<GlobalBatch> Step(std::vector<std::unique_ptr<DataLoader>>& job, uint64_t* epoch = nullptr) {
  GlobalBatch global;
  int ended = 0;
  for (auto& loader : job) {
    auto batch = loader->Next();
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    if (!batch.ok() || !*batch) {
      ++ended;
      continue;
    }
    if (epoch) *epoch = (*batch)->epoch;
    global.insert(global.end(), (*batch)->records.begin(), (*batch)->records.end());
  }
  EXPECT_TRUE(ended == 0 || ended == static_cast<int>(job.size())) << "workers disagree on the end";
  if (ended) return std::nullopt;
  return global;
}

// Every global batch to the end, with the epoch of each.
std::vector<std::pair<uint64_t, GlobalBatch>> RunJob(std::vector<std::unique_ptr<DataLoader>>& job,
                                                  std::optional<size_t> steps = std::nullopt) {
  std::vector<std::pair<uint64_t, GlobalBatch>> out;
  while (!steps || out.size() < *steps) {
    uint64_t epoch = 0;
    std::optional<GlobalBatch> global = Step(job, &epoch);
    if (!global) break;
    out.emplace_back(epoch, std::move(*global));
  }
  return out;
}

TEST_P(LoaderSuite, ElasticGlobalBatchesAreTheSameForAnyWorldSizeThatDividesThePartitions) {
  const Dataset dataset = WriteElasticDataset(*store_, prefix_);
  for (bool drop_remainder : {false, true}) {
    SCOPED_TRACE(drop_remainder ? "drop_remainder" : "keep remainder");
    DataLoaderOptions options = ElasticOptions(store_, dataset);
    options.drop_remainder = drop_remainder;
    auto single = OpenJob(options, 1);
    const auto reference = RunJob(single);
    // 139 records over 12 partitions: 11 or 12 each, 2 per step: 6 steps
    // (the last one short), or 5 full steps of 24 with drop_remainder.
    ASSERT_EQ(reference.size(), drop_remainder ? 10u : 12u);
    for (uint64_t epoch : {0, 1}) {
      std::vector<std::string> seen;
      for (const auto& [e, global] : reference) {
        if (e != epoch) continue;
        if (drop_remainder) {
          EXPECT_EQ(global.size(), 24u);
        }
        seen.insert(seen.end(), global.begin(), global.end());
      }
      std::sort(seen.begin(), seen.end());
      EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end()) << "a record twice in epoch " << epoch;
      EXPECT_EQ(seen.size(), drop_remainder ? 120u : 139u);
    }
    EXPECT_NE(reference[0].second, reference[6 - (drop_remainder ? 1 : 0)].second) << "epochs differ in order";
    for (auto [world, local] : std::vector<std::pair<int, int>>{{2, 1}, {4, 1}, {2, 2}, {3, 2}, {12, 1}}) {
      SCOPED_TRACE("world " + std::to_string(world) + " x " + std::to_string(local));
      auto job = OpenJob(options, world, local);
      EXPECT_EQ(RunJob(job), reference);
    }
  }
}

TEST_P(LoaderSuite, ElasticRestartOnAnotherWorldSizeContinuesTheSameGlobalSequence) {
  const Dataset dataset = WriteElasticDataset(*store_, prefix_);
  const DataLoaderOptions options = ElasticOptions(store_, dataset);
  auto single = OpenJob(options, 1);
  const auto reference = RunJob(single);
  ASSERT_EQ(reference.size(), 12u);
  struct Restart {
    int before, after;
    size_t steps;
  };
  for (Restart restart :
       {Restart{4, 2, 3}, Restart{2, 3, 1}, Restart{1, 4, 4}, Restart{3, 6, 5}, Restart{4, 1, 6}, Restart{2, 4, 8}}) {
    SCOPED_TRACE(std::to_string(restart.before) + " -> " + std::to_string(restart.after) + " after " +
                 std::to_string(restart.steps) + " steps");
    auto first = OpenJob(options, restart.before);
    auto delivered = RunJob(first, restart.steps);
    ASSERT_EQ(delivered.size(), restart.steps);
    // Every rank's state says the same place; the restarted ranks may get
    // any one of them (here: each gets a different old rank's, round robin).
    std::vector<LoaderState> saved;
    for (auto& loader : first) saved.push_back(loader->State());
    for (const LoaderState& state : saved) {
      EXPECT_EQ(state.position, saved[0].position);
      EXPECT_EQ(state.epoch, saved[0].epoch);
      EXPECT_EQ(state.partitions, kPartitions);
    }
    first.clear();  // the old job is gone
    std::vector<std::unique_ptr<DataLoader>> second;
    for (int rank = 0; rank < restart.after; ++rank) {
      DataLoaderOptions mine = options;
      mine.rank = rank;
      mine.world_size = restart.after;
      auto decoded = LoaderState::Decode(saved[rank % saved.size()].Encode());
      ASSERT_TRUE(decoded.ok());
      if (rank % 2 == 1) {  // odd ranks are opened at the saved place, even ones moved there
        mine.start_epoch = decoded->epoch;
        mine.start_position = decoded->position;
      }
      auto loader = DataLoader::Open(mine);
      ASSERT_TRUE(loader.ok()) << loader.status().ToString();
      if (rank % 2 == 0) {
        ASSERT_TRUE((*loader)->Resume(*decoded).ok());
      }
      second.push_back(std::move(loader).value());
    }
    auto rest = RunJob(second);
    delivered.insert(delivered.end(), rest.begin(), rest.end());
    // The same global batches as a run that was never restarted: so every
    // record of the epoch exactly once, and later epochs in the same order.
    EXPECT_EQ(delivered, reference);
  }
}

TEST_P(LoaderSuite, ElasticBadShapesAndStatesAreRefused) {
  const Dataset dataset = WriteElasticDataset(*store_, prefix_);
  DataLoaderOptions options = ElasticOptions(store_, dataset);
  options.rank = 0;
  options.world_size = 5;  // does not divide 12
  auto loader = DataLoader::Open(options);
  ASSERT_FALSE(loader.ok());
  EXPECT_EQ(loader.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loader.status().message().find("partitions (12)"), std::string::npos) << loader.status().ToString();

  options.world_size = 1;
  options.global_batch_size = 30;  // not a multiple of 12
  EXPECT_EQ(DataLoader::Open(options).status().code(), StatusCode::kInvalidArgument);

  options = ElasticOptions(store_, dataset);
  options.rank = 0;
  options.world_size = 2;
  auto elastic = DataLoader::Open(options);
  ASSERT_TRUE(elastic.ok());
  DataLoaderOptions fixed_options = options;
  fixed_options.partitions = 0;
  auto fixed = DataLoader::Open(fixed_options);
  ASSERT_TRUE(fixed.ok());
  // A fixed-shape state cannot say where 12 partitions are, and the reverse.
  EXPECT_EQ((*elastic)->Resume((*fixed)->State()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*fixed)->Resume((*elastic)->State()).code(), StatusCode::kInvalidArgument);
  LoaderState other_seed = (*elastic)->State();
  other_seed.seed = 6;
  EXPECT_EQ((*elastic)->Resume(other_seed).code(), StatusCode::kInvalidArgument);
  LoaderState other_partitions = (*elastic)->State();
  other_partitions.partitions = 24;
  EXPECT_EQ((*elastic)->Resume(other_partitions).code(), StatusCode::kInvalidArgument);
}

TEST(ElasticState, PartitionsRoundTripAndOldTextStillDecodes) {
  LoaderState state;
  state.seed = 7;
  state.epoch = 1;
  state.position = 10;
  state.worker = 1;
  state.workers = 4;
  state.partitions = 12;
  EXPECT_EQ(state.Encode(), "spool-loader/1 seed=7 epoch=1 position=10 worker=1 workers=4 partitions=12");
  auto decoded = LoaderState::Decode(state.Encode());
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, state);
  auto old = LoaderState::Decode("spool-loader/1 seed=7 epoch=1 position=10 worker=1 workers=4");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->partitions, 0u);
  EXPECT_FALSE(LoaderState::Decode("spool-loader/1 seed=7 epoch=1 position=10 worker=1 workers=5 partitions=12").ok());
}

}  // namespace
}  // namespace spool::testing
