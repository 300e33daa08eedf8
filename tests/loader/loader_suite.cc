#include "tests/loader/loader_suite.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "spool/core/executor.h"
#include "spool/records/example.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/record_writer.h"
#include "tests/loader/test_dataset.h"

namespace spool::testing {
using loader::BadShardPolicy;
using loader::DataLoader;
using loader::DataLoaderOptions;
using loader::LoaderCounters;
using loader::LoaderState;

namespace {

using records::Compression;

enum class InputMode { kManifest, kGlob, kList };

// Uneven on purpose: an empty shard, a one-record shard, a big one.
const std::vector<uint64_t> kUneven = {17, 3, 0, 41, 9, 1, 25};

DataLoaderOptions OptionsFor(const std::shared_ptr<ObjectStore>& store, const Dataset& dataset, InputMode mode) {
  DataLoaderOptions options;
  options.store = store;
  switch (mode) {
    case InputMode::kManifest: options.inputs = {dataset.manifest_key}; break;
    case InputMode::kGlob: options.inputs = {dataset.glob}; break;
    case InputMode::kList: options.inputs = dataset.shard_keys; break;
  }
  options.seed = 42;
  options.shuffle_buffer = 16;
  options.batch_size = 4;
  options.interleave = 3;
  options.interleave_block = 2;
  options.memory_budget = 16 << 20;
  options.read_ahead = 256 << 10;
  options.fetch_chunk = 4 << 10;
  return options;
}

std::vector<std::string> ReadAllRecords(DataLoaderOptions options) {
  auto loader = DataLoader::Open(std::move(options));
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return {};
  std::vector<std::string> records;
  Status drained = Drain(**loader, &records);
  EXPECT_TRUE(drained.ok()) << drained.ToString();
  return records;
}

std::vector<std::string> Sorted(std::vector<std::string> records) {
  std::sort(records.begin(), records.end());
  return records;
}

TEST_P(LoaderSuite, EveryRecordGoesToExactlyOneWorkerInADeterministicOrder) {
  DatasetSpec spec{prefix_ + "/uneven", kUneven};
  spec.write_manifest = true;
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  Executor one_thread(1);
  for (InputMode mode : {InputMode::kManifest, InputMode::kGlob}) {
    for (int workers : {1, 2, 3, 8}) {
      SCOPED_TRACE("workers " + std::to_string(workers) + (mode == InputMode::kManifest ? " manifest" : " glob"));
      std::vector<std::string> all;
      std::vector<size_t> sizes;
      for (int rank = 0; rank < workers; ++rank) {
        DataLoaderOptions options = OptionsFor(store_, *dataset, mode);
        options.rank = rank;
        options.world_size = workers;
        std::vector<std::string> mine = ReadAllRecords(options);
        // Same sequence with one executor thread, a small budget and no
        // read-ahead: timing never changes the order.
        options.executor = &one_thread;
        options.memory_budget = 1 << 20;
        options.read_ahead = 0;
        options.prefetch_batches = 1;
        EXPECT_EQ(ReadAllRecords(options), mine) << "rank " << rank;
        sizes.push_back(mine.size());
        all.insert(all.end(), mine.begin(), mine.end());
      }
      EXPECT_EQ(Sorted(all), Sorted(dataset->records));
      if (mode == InputMode::kManifest || workers > static_cast<int>(kUneven.size())) {
        // Record counts known: split by records, no worker idles.
        auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
        EXPECT_LE(*hi - *lo, 1u);
      }
    }
  }
}

TEST_P(LoaderSuite, EachEpochDeliversEverythingOnceInANewOrder) {
  DatasetSpec spec{prefix_ + "/epochs", kUneven};
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kList);
  options.epochs = 3;
  options.batch_size = 5;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  std::map<uint64_t, std::vector<std::string>> by_epoch;
  while (true) {
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (!*batch) break;
    EXPECT_LE((*batch)->records.size(), 5u);
    auto& epoch = by_epoch[(*batch)->epoch];
    epoch.insert(epoch.end(), (*batch)->records.begin(), (*batch)->records.end());
  }
  ASSERT_EQ(by_epoch.size(), 3u);
  for (auto& [epoch, records] : by_epoch) EXPECT_EQ(Sorted(records), Sorted(dataset->records)) << epoch;
  EXPECT_NE(by_epoch[0], by_epoch[1]);
  EXPECT_NE(by_epoch[1], by_epoch[2]);
  EXPECT_EQ((*loader)->Counters().records, 3 * dataset->records.size());
}

TEST_P(LoaderSuite, NonDeterministicModeStillDeliversEachRecordOnce) {
  DatasetSpec spec{prefix_ + "/sloppy", kUneven};
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  std::vector<std::string> all;
  for (int rank = 0; rank < 3; ++rank) {
    DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kList);
    options.deterministic = false;
    options.rank = rank;
    options.world_size = 3;
    std::vector<std::string> mine = ReadAllRecords(options);
    all.insert(all.end(), mine.begin(), mine.end());
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok());
    EXPECT_EQ((*loader)->Resume((*loader)->State()).code(), StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(Sorted(all), Sorted(dataset->records));
}

TEST_P(LoaderSuite, DropRemainderDropsOnlyTheLastPartialBatch) {
  DatasetSpec spec{prefix_ + "/drop", {10, 3}};
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kList);
  options.batch_size = 4;
  options.drop_remainder = true;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  int batches = 0;
  while (true) {
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (!*batch) break;
    EXPECT_EQ((*batch)->records.size(), 4u);
    ++batches;
  }
  EXPECT_EQ(batches, 3);
}

struct ResumeCase {
  const char* name;
  InputMode mode;
  Compression compression;
  bool index;
};

TEST_P(LoaderSuite, ResumeAtTwentyRandomPointsContinuesTheUninterruptedSequence) {
  const ResumeCase cases[] = {
      {"manifest", InputMode::kManifest, Compression::kNone, false},
      {"glob-unknown-counts", InputMode::kGlob, Compression::kNone, false},
      {"index-files", InputMode::kGlob, Compression::kNone, true},
      {"gzip", InputMode::kManifest, Compression::kGzip, false},
  };
  std::mt19937 random(20260322);
  for (const ResumeCase& c : cases) {
    SCOPED_TRACE(c.name);
    DatasetSpec spec{prefix_ + "/resume-" + c.name, kUneven};
    spec.compression = c.compression;
    spec.write_index = c.index;
    spec.write_manifest = c.mode == InputMode::kManifest;
    auto dataset = WriteDataset(*store_, spec);
    ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
    DataLoaderOptions options = OptionsFor(store_, *dataset, c.mode);
    options.rank = 1;
    options.world_size = 2;
    options.epochs = 2;
    options.shuffle_buffer = 23;
    options.batch_size = 3;
    std::vector<std::string> full;
    std::vector<LoaderState> states;
    {
      auto loader = DataLoader::Open(options);
      ASSERT_TRUE(loader.ok()) << loader.status().ToString();
      ASSERT_TRUE(Drain(**loader, &full, &states).ok());
    }
    ASSERT_GT(states.size(), 20u);
    // Records delivered up to and including batch k, from a second run
    // batch by batch (which also checks that runs repeat exactly).
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok());
    std::vector<size_t> prefix_sizes;
    {
      std::vector<std::string> again;
      for (size_t k = 0; k < states.size(); ++k) {
        ASSERT_TRUE(Drain(**loader, &again, nullptr, 1).ok());
        prefix_sizes.push_back(again.size());
      }
      EXPECT_EQ(again, full);
    }
    for (int trial = 0; trial < 20; ++trial) {
      const size_t k = std::uniform_int_distribution<size_t>(0, states.size() - 1)(random);
      auto decoded = LoaderState::Decode(states[k].Encode());
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      ASSERT_EQ(*decoded, states[k]);
      auto resumed = DataLoader::Open(options);
      ASSERT_TRUE(resumed.ok());
      Status status = (*resumed)->Resume(*decoded);
      ASSERT_TRUE(status.ok()) << status.ToString();
      std::vector<std::string> rest;
      ASSERT_TRUE(Drain(**resumed, &rest).ok());
      std::vector<std::string> expected(full.begin() + static_cast<long>(prefix_sizes[k]), full.end());
      ASSERT_EQ(rest, expected) << "resumed after batch " << k << " at " << states[k].Encode();
      // Opened at that point instead of moved there: the same records.
      DataLoaderOptions at = options;
      at.start_epoch = states[k].epoch;
      at.start_position = states[k].position;
      ASSERT_EQ(ReadAllRecords(at), expected) << "opened at " << states[k].Encode();
    }
  }
}

TEST_P(LoaderSuite, StateFromAnotherWorkerIsRefused) {
  DatasetSpec spec{prefix_ + "/refuse", {5, 5}};
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok());
  DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kList);
  options.rank = 0;
  options.world_size = 2;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok());
  LoaderState state = (*loader)->State();
  state.worker = 1;
  Status status = (*loader)->Resume(state);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
}

TEST_P(LoaderSuite, MemoryBudgetHoldsWithHundredKilobyteRecords) {
  DatasetSpec spec{prefix_ + "/budget", {30, 12, 45, 20, 33, 8}};
  spec.record_bytes = 100 << 10;
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kList);
  options.memory_budget = 8 << 20;
  options.read_ahead = 512 << 10;
  options.fetch_chunk = 256 << 10;
  options.shuffle_buffer = 8;
  options.batch_size = 4;
  options.interleave = 4;
  options.prefetch_batches = 2;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  std::vector<std::string> records;
  ASSERT_TRUE(Drain(**loader, &records).ok());
  EXPECT_EQ(Sorted(records), Sorted(dataset->records));
  LoaderCounters counters = (*loader)->Counters();
  EXPECT_GT(counters.peak_buffered_bytes, 1u << 20);  // it did buffer ahead
  EXPECT_LE(counters.peak_buffered_bytes, options.memory_budget);
  EXPECT_EQ(counters.budget_overruns, 0u);
}

TEST_P(LoaderSuite, ABudgetSmallerThanTheShuffleBufferStillFinishes) {
  DatasetSpec spec{prefix_ + "/tiny-budget", {20, 20}};
  spec.record_bytes = 100 << 10;
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kList);
  options.memory_budget = 2 << 20;
  options.read_ahead = 128 << 10;
  options.fetch_chunk = 128 << 10;
  options.shuffle_buffer = 30;  // 3 MB of records: more than the budget
  std::vector<std::string> records = ReadAllRecords(options);
  EXPECT_EQ(Sorted(records), Sorted(dataset->records));
}

// Byte offset of record `index` in an uncompressed shard of equal records.
uint64_t RecordOffset(uint64_t index, uint64_t payload) { return index * (payload + 16); }

struct DamageCase {
  const char* name;
  bool truncate;
};

TEST_P(LoaderSuite, DamagedShardFailsNamingShardAndOffset) {
  for (DamageCase damage : {DamageCase{"corrupt", false}, DamageCase{"truncated", true}}) {
    SCOPED_TRACE(damage.name);
    DatasetSpec spec{prefix_ + "/fail-" + damage.name, {10, 10, 10}};
    auto dataset = WriteDataset(*store_, spec);
    ASSERT_TRUE(dataset.ok());
    const std::string& bad = dataset->shard_keys[1];
    const uint64_t offset = RecordOffset(6, spec.record_bytes);
    Status damaged = damage.truncate ? Truncate(*store_, bad, offset + 20) : FlipByte(*store_, bad, offset + 30);
    ASSERT_TRUE(damaged.ok()) << damaged.ToString();
    DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kList);
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok());
    std::vector<std::string> records;
    Status status = Drain(**loader, &records);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
    EXPECT_NE(status.message().find(store_->Describe(bad)), std::string::npos) << status.ToString();
    // TensorFlow names a bad payload checksum at the payload (record + 12).
    const uint64_t named = damage.truncate ? offset : offset + 12;
    EXPECT_NE(status.message().find("at " + std::to_string(named)), std::string::npos) << status.ToString();
    // Next() keeps failing rather than pretending the epoch ended.
    EXPECT_FALSE((*loader)->Next().ok());
  }
}

TEST_P(LoaderSuite, DamagedShardIsSkippedCountedAndResumedIdentically) {
  for (DamageCase damage : {DamageCase{"corrupt", false}, DamageCase{"truncated", true}}) {
    SCOPED_TRACE(damage.name);
    DatasetSpec spec{prefix_ + "/skip-" + damage.name, {10, 10, 10, 7}};
    auto dataset = WriteDataset(*store_, spec);
    ASSERT_TRUE(dataset.ok());
    const std::string& bad = dataset->shard_keys[1];
    const uint64_t offset = RecordOffset(6, spec.record_bytes);
    Status damaged = damage.truncate ? Truncate(*store_, bad, offset + 20) : FlipByte(*store_, bad, offset + 30);
    ASSERT_TRUE(damaged.ok()) << damaged.ToString();
    DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kList);
    options.bad_shard_policy = BadShardPolicy::kSkip;
    options.epochs = 2;
    std::vector<std::string> full;
    std::vector<LoaderState> states;
    uint64_t skipped_shards = 0;
    {
      auto loader = DataLoader::Open(options);
      ASSERT_TRUE(loader.ok());
      Status status = Drain(**loader, &full, &states);
      ASSERT_TRUE(status.ok()) << status.ToString();
      skipped_shards = (*loader)->Counters().skipped_shards;
    }
    // Everything except records 6..9 of shard 1, in both epochs.
    std::vector<std::string> expected;
    for (const std::string& record : dataset->records) {
      bool lost = false;
      for (int r = 6; r < 10; ++r) lost |= record == RecordPayload(1, r, spec.record_bytes);
      if (!lost) expected.push_back(record);
    }
    ASSERT_EQ(full.size(), 2 * expected.size());
    EXPECT_EQ(Sorted(std::vector<std::string>(full.begin(), full.begin() + static_cast<long>(expected.size()))),
              Sorted(expected));
    EXPECT_EQ(skipped_shards, 2u);  // once per epoch
    // A state taken after the damage carries the cut; resuming from any
    // state reproduces the rest.
    bool any_cut = false;
    for (const LoaderState& state : states) any_cut |= !state.truncated.empty();
    EXPECT_TRUE(any_cut);
    for (size_t k = 0; k < states.size(); k += 3) {
      auto counter = DataLoader::Open(options);
      ASSERT_TRUE(counter.ok());
      std::vector<std::string> prefix;
      ASSERT_TRUE(Drain(**counter, &prefix, nullptr, k + 1).ok());
      const size_t delivered = prefix.size();
      auto resumed = DataLoader::Open(options);
      ASSERT_TRUE(resumed.ok());
      ASSERT_TRUE((*resumed)->Resume(states[k]).ok());
      std::vector<std::string> rest;
      ASSERT_TRUE(Drain(**resumed, &rest).ok());
      EXPECT_EQ(rest, std::vector<std::string>(full.begin() + static_cast<long>(delivered), full.end())) << k;
    }
  }
}

// A shard replaced by another valid one of the same size passes every
// record CRC and the size check: only the manifest's whole-shard CRC32C,
// checked as the shard streams, catches it.
TEST_P(LoaderSuite, ShardThatNoLongerMatchesItsManifestIsDataLoss) {
  DatasetSpec spec{prefix_ + "/swapped", {6, 6, 6}};
  spec.write_manifest = true;
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok());
  auto other = ReadAll(*store_, dataset->shard_keys[2]);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(WriteAll(*store_, dataset->shard_keys[0], *other).ok());
  DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kManifest);
  {
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    std::vector<std::string> records;
    Status status = Drain(**loader, &records);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
    EXPECT_NE(status.message().find(store_->Describe(dataset->shard_keys[0])), std::string::npos)
        << status.ToString();
    EXPECT_NE(status.message().find("CRC32C of the whole object"), std::string::npos) << status.ToString();
  }
  options.bad_shard_policy = BadShardPolicy::kSkip;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok());
  std::vector<std::string> records;
  ASSERT_TRUE(Drain(**loader, &records).ok());
  EXPECT_EQ((*loader)->Counters().skipped_shards, 1u);
  // Listed without the manifest, the same bytes are just records.
  EXPECT_EQ(ReadAllRecords(OptionsFor(store_, *dataset, InputMode::kList)).size(), 18u);
}

// Shards are checked when a worker reads them, not when the loader opens
// (that would cost every worker a request per shard): a missing shard opens
// fine and fails when its turn comes, naming the shard and the manifest.
TEST_P(LoaderSuite, MissingManifestShardFailsWhenRead) {
  DatasetSpec spec{prefix_ + "/missing", {4, 4, 4}};
  spec.write_manifest = true;
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok());
  ASSERT_TRUE(store_->Delete(dataset->shard_keys[2]).ok());
  DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kManifest);
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  std::vector<std::string> records;
  Status status = Drain(**loader, &records);
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status.ToString();
  EXPECT_NE(status.message().find(store_->Describe(dataset->shard_keys[2])), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find(store_->Describe(dataset->manifest_key)), std::string::npos) << status.ToString();
  EXPECT_LT(records.size(), 12u);
}

TEST_P(LoaderSuite, ShardOfAnotherSizeThanItsManifestSaysIsDataLossWhenRead) {
  DatasetSpec spec{prefix_ + "/resized", {4, 4, 7}};
  spec.write_manifest = true;
  auto dataset = WriteDataset(*store_, spec);
  ASSERT_TRUE(dataset.ok());
  auto longer = ReadAll(*store_, dataset->shard_keys[2]);
  ASSERT_TRUE(longer.ok());
  ASSERT_TRUE(WriteAll(*store_, dataset->shard_keys[1], *longer).ok());
  DataLoaderOptions options = OptionsFor(store_, *dataset, InputMode::kManifest);
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  std::vector<std::string> records;
  Status status = Drain(**loader, &records);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
  EXPECT_NE(status.message().find(store_->Describe(dataset->shard_keys[1])), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("says"), std::string::npos) << status.ToString();
}

TEST_P(LoaderSuite, GlobWithoutMatchIsNotFound) {
  DataLoaderOptions options;
  options.store = store_;
  options.inputs = {prefix_ + "/nothing-*.tfrecord"};
  auto loader = DataLoader::Open(options);
  ASSERT_FALSE(loader.ok());
  EXPECT_EQ(loader.status().code(), StatusCode::kNotFound) << loader.status().ToString();
}

TEST_P(LoaderSuite, ParsesExamplesOnTheExecutor) {
  const std::string key = prefix_ + "/examples.tfrecord";
  {
    auto writer = records::RecordWriter::Open(*store_, key);
    ASSERT_TRUE(writer.ok());
    for (int i = 0; i < 10; ++i) {
      tensorflow::Example example;
      (*example.mutable_features()->mutable_feature())["id"].mutable_int64_list()->add_value(i);
      ASSERT_TRUE((*writer)->Write(example.SerializeAsString()).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  DataLoaderOptions options;
  options.store = store_;
  options.inputs = {key};
  options.parse_examples = true;
  options.batch_size = 3;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok());
  std::set<int64_t> ids;
  while (true) {
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (!*batch) break;
    ASSERT_EQ((*batch)->examples.size(), (*batch)->records.size());
    for (const auto& example : (*batch)->examples) {
      auto id = records::GetInt64s(example, "id");
      ASSERT_TRUE(id.ok());
      ids.insert((*id)[0]);
    }
  }
  EXPECT_EQ(ids.size(), 10u);
}

}  // namespace
}  // namespace spool::testing
