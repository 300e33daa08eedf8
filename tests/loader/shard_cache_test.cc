// The loader's local shard cache (shard_cache.h): local files as the bucket,
// a counting store to see what reaches it.
#include "spool/records/loader/shard_cache.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "spool/core/env.h"
#include "spool/core/storage/local_store.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/loader/plan.h"
#include "tests/loader/test_dataset.h"
#include "tests/support/forwarding_store.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace spool::loader {
namespace {

using spool::test_support::TempDir;

// Counts the opens (by key or from what a manifest said) and the bytes read
// of every key, and can slow reads down.
class CountingStore : public test_support::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override {
    SPOOL_ASSIGN_OR_RETURN(auto object, ForwardingStore::OpenRead(key));
    return Count(key, std::move(object));
  }
  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed) override {
    if (listed.crc32c) ++opens_with_crc32c_;
    SPOOL_ASSIGN_OR_RETURN(auto object, ForwardingStore::OpenListed(listed));
    return Count(listed.key, std::move(object));
  }
  // OpenListed calls that gave the object's CRC32C (which lets S3 and GCS
  // open a large object without a metadata request).
  uint64_t opens_with_crc32c() const { return opens_with_crc32c_.load(); }
  // Bytes read from the shards (keys ending in ".tfrecord"), not manifests.
  uint64_t bytes() const { return bytes_.load(); }
  static bool IsShard(std::string_view key) { return key.ends_with(".tfrecord"); }
  uint64_t opens(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto found = opens_.find(key);
    return found == opens_.end() ? 0 : found->second;
  }
  std::chrono::milliseconds delay{0};

 private:
  std::atomic<uint64_t> opens_with_crc32c_{0};
  std::unique_ptr<ReadableObject> Count(std::string_view key, std::unique_ptr<ReadableObject> object) {
    {
      std::lock_guard lock(mu_);
      ++opens_[std::string(key)];
    }
    return std::unique_ptr<ReadableObject>(new Counted(std::move(object), this, IsShard(key)));
  }

  class Counted : public ReadableObject {
   public:
    Counted(std::unique_ptr<ReadableObject> inner, CountingStore* owner, bool counted)
        : inner_(std::move(inner)), owner_(owner), counted_(counted) {}
    const ObjectInfo& info() const override { return inner_->info(); }
    Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
      if (owner_->delay.count() > 0) std::this_thread::sleep_for(owner_->delay);
      SPOOL_ASSIGN_OR_RETURN(size_t n, inner_->ReadAt(offset, buffer));
      if (counted_) owner_->bytes_ += n;
      return n;
    }

   private:
    std::unique_ptr<ReadableObject> inner_;
    CountingStore* owner_;
    bool counted_;
  };
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> opens_;
  std::atomic<uint64_t> bytes_{0};
};

constexpr size_t kShards = 10;

struct Bucket {
  TempDir dir{"spool-cache-bucket"};
  std::shared_ptr<CountingStore> store = std::make_shared<CountingStore>(std::make_shared<LocalStore>());
  testing::Dataset dataset;
  uint64_t shard_bytes = 0;  // every shard has the same size
  uint64_t total_bytes = 0;

  Bucket() {
    testing::DatasetSpec spec;
    spec.prefix = dir.Key("train");
    spec.shard_records.assign(kShards, 40);
    spec.record_bytes = 200;
    spec.write_manifest = true;
    auto written = testing::WriteDataset(*store, spec);
    EXPECT_TRUE(written.ok()) << written.status().ToString();
    dataset = *written;
    for (const std::string& key : dataset.shard_keys) {
      auto info = store->Stat(key);
      EXPECT_TRUE(info.ok());
      shard_bytes = info->size;
      total_bytes += info->size;
    }
  }

  DataLoaderOptions Options(uint64_t epochs) const {
    DataLoaderOptions options;
    options.inputs = {dataset.manifest_key};
    options.store = store;
    options.rank = 0;
    options.world_size = 1;
    options.seed = 7;
    options.epochs = epochs;
    options.batch_size = 16;
    options.shuffle_buffer = 64;
    return options;
  }
  uint64_t shard_opens() const {
    uint64_t opens = 0;
    for (const std::string& key : dataset.shard_keys) opens += store->opens(key);
    return opens;
  }
};

std::vector<std::string> ReadAll(const DataLoaderOptions& options, LoaderCounters* counters = nullptr) {
  auto loader = DataLoader::Open(options);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return {};
  std::vector<std::string> records;
  Status drained = testing::Drain(**loader, &records);
  EXPECT_TRUE(drained.ok()) << drained.ToString();
  if (counters) *counters = (*loader)->Counters();
  return records;
}

TEST(ShardCache, CacheAsLargeAsTheDatasetFetchesEachShardOnceOverThreeEpochs) {
  Bucket bucket;
  const std::vector<std::string> uncached = ReadAll(bucket.Options(3));
  ASSERT_EQ(uncached.size(), kShards * 40 * 3);
  const uint64_t opens_uncached = bucket.shard_opens();
  const uint64_t bytes_uncached = bucket.store->bytes();

  TempDir cache("spool-cache");
  DataLoaderOptions options = bucket.Options(3);
  options.cache_dir = cache.path().string();
  options.cache_limit = bucket.total_bytes;
  LoaderCounters counters;
  EXPECT_TRUE(ReadAll(options, &counters) == uncached);       // same records, same order
  EXPECT_EQ(bucket.shard_opens() - opens_uncached, kShards);  // epochs 2 and 3 sent no GET
  EXPECT_EQ(bucket.store->opens_with_crc32c(), kShards) << "each fetch gives the store the manifest's CRC32C";
  EXPECT_EQ(bucket.store->bytes() - bytes_uncached, bucket.total_bytes);
  EXPECT_EQ(counters.cache_fetched_bytes, bucket.total_bytes);
  EXPECT_EQ(counters.cache_evicted_bytes, 0u);
  EXPECT_EQ(counters.cache_hits + counters.cache_misses, 3 * kShards);

  // A restarted job reuses the files (after checking them): no GET at all.
  const uint64_t opens_before = bucket.shard_opens();
  EXPECT_TRUE(ReadAll(options, &counters) == uncached);
  EXPECT_EQ(bucket.shard_opens(), opens_before);
  EXPECT_EQ(counters.cache_misses, 0u);

  auto listed = ListShardCache(options.cache_dir);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), kShards);
  auto cleared = ClearShardCache(options.cache_dir);
  ASSERT_TRUE(cleared.ok());
  EXPECT_EQ(*cleared, bucket.total_bytes);
  EXPECT_TRUE(ListShardCache(options.cache_dir)->empty());
}

// Shards read from the store (misses) by a cache of `capacity` equal shards
// over `sequence`: Belady's rule (evict the shard used furthest ahead; do not
// keep the new one when it is itself used last), or LRU.
uint64_t SimulatedMisses(const std::vector<uint32_t>& sequence, size_t capacity, bool belady) {
  std::vector<uint32_t> cache;  // LRU: least recent first
  uint64_t misses = 0;
  auto next_use = [&](uint32_t shard, size_t after) {
    for (size_t j = after + 1; j < sequence.size(); ++j) {
      if (sequence[j] == shard) return j;
    }
    return SIZE_MAX;
  };
  for (size_t i = 0; i < sequence.size(); ++i) {
    const uint32_t shard = sequence[i];
    auto found = std::find(cache.begin(), cache.end(), shard);
    if (found != cache.end()) {
      cache.erase(found);
      cache.push_back(shard);
      continue;
    }
    ++misses;
    if (cache.size() < capacity) {
      cache.push_back(shard);
      continue;
    }
    if (!belady) {
      cache.erase(cache.begin());
      cache.push_back(shard);
      continue;
    }
    auto victim = std::max_element(cache.begin(), cache.end(),
                                   [&](uint32_t a, uint32_t b) { return next_use(a, i) < next_use(b, i); });
    if (next_use(*victim, i) <= next_use(shard, i)) continue;  // the new shard is needed last
    *victim = shard;
  }
  return misses;
}

TEST(ShardCache, HalfSizeCacheFetchesWhatBeladyPredictsAndLessThanLru) {
  Bucket bucket;
  DataLoaderOptions sequential = bucket.Options(3);
  sequential.interleave = 1;  // shards used strictly in plan order, as the simulation assumes
  sequential.prefetch_shards = 0;
  const std::vector<std::string> uncached = ReadAll(sequential);
  std::vector<uint32_t> sequence;
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    for (uint32_t shard : EpochShardOrder(kShards, 7, epoch, true)) sequence.push_back(shard);
  }
  const uint64_t belady = SimulatedMisses(sequence, kShards / 2, true);
  const uint64_t lru = SimulatedMisses(sequence, kShards / 2, false);
  ASSERT_LT(belady, lru);
  std::printf("3 epochs of %zu shards, room for %zu: Belady fetches %llu shards, LRU %llu\n", kShards, kShards / 2,
              static_cast<unsigned long long>(belady), static_cast<unsigned long long>(lru));

  std::map<CachePolicy, uint64_t> fetched;
  for (CachePolicy policy : {CachePolicy::kNextUse, CachePolicy::kLru}) {
    TempDir cache("spool-cache");
    DataLoaderOptions options = sequential;
    options.cache_dir = cache.path().string();
    options.cache_limit = bucket.total_bytes / 2;
    options.cache_policy = policy;
    options.cache_fetch_ahead = 0;
    const uint64_t before = bucket.store->bytes();
    EXPECT_TRUE(ReadAll(options) == uncached);
    fetched[policy] = bucket.store->bytes() - before;
  }
  EXPECT_EQ(fetched[CachePolicy::kNextUse], belady * bucket.shard_bytes);
  EXPECT_EQ(fetched[CachePolicy::kLru], lru * bucket.shard_bytes);
  EXPECT_LT(fetched[CachePolicy::kNextUse], fetched[CachePolicy::kLru]);
}

TEST(ShardCache, FetchAheadKeepsTheRecordsAndStaysWithinTheLimit) {
  Bucket bucket;
  const std::vector<std::string> uncached = ReadAll(bucket.Options(3));
  TempDir cache("spool-cache");
  DataLoaderOptions options = bucket.Options(3);
  options.cache_dir = cache.path().string();
  options.cache_limit = bucket.total_bytes / 2;
  options.cache_fetch_ahead = 2;
  EXPECT_TRUE(ReadAll(options) == uncached);
  auto listed = ListShardCache(options.cache_dir);
  ASSERT_TRUE(listed.ok());
  uint64_t held = 0;
  for (const CachedFile& file : *listed) held += file.size;
  EXPECT_LE(held, options.cache_limit);
}

TEST(ShardCache, ElasticModeReadsTheSameRecordsThroughTheCache) {
  Bucket bucket;
  DataLoaderOptions options = bucket.Options(2);
  options.partitions = 4;
  options.global_batch_size = 16;
  const std::vector<std::string> uncached = ReadAll(options);
  ASSERT_EQ(uncached.size(), 2 * kShards * 40);
  TempDir cache("spool-cache");
  options.cache_dir = cache.path().string();
  options.cache_limit = bucket.total_bytes / 2;
  LoaderCounters counters;
  EXPECT_TRUE(ReadAll(options, &counters) == uncached);
  EXPECT_GT(counters.cache_hits, 0u);
}

TEST(ShardCache, PartialAndDamagedFilesAreNeverRead) {
  Bucket bucket;
  const std::vector<std::string> uncached = ReadAll(bucket.Options(1));
  TempDir cache("spool-cache");
  DataLoaderOptions options = bucket.Options(1);
  options.cache_dir = cache.path().string();
  EXPECT_TRUE(ReadAll(options) == uncached);
  // Damage one complete file, and leave a ".spoolpart" as a killed fetch would.
  auto listed = ListShardCache(options.cache_dir);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), kShards);
  const std::string damaged = (cache / (*listed)[0].name).string();
  {
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.put('X');
  }
  std::filesystem::remove(cache / (*listed)[1].name);
  std::ofstream(cache / ("." + (*listed)[1].name + ".spoolpart-" + std::to_string(bucket.shard_bytes))) << "partial";
  const uint64_t opens = bucket.shard_opens();
  LoaderCounters counters;
  EXPECT_TRUE(ReadAll(options, &counters) == uncached);
  EXPECT_EQ(bucket.shard_opens() - opens, 2u);  // the damaged one and the missing one, fetched again
  EXPECT_EQ(counters.cache_fetched_bytes, 2 * bucket.shard_bytes);
  for (const auto& entry : std::filesystem::directory_iterator(cache.path())) {
    EXPECT_EQ(entry.path().string().find("spoolpart"), std::string::npos) << entry.path();
  }
}

TEST(ShardCache, AFileForADirectoryTurnsTheCacheOffAndTheRecordsStayTheSame) {
  Bucket bucket;
  const std::vector<std::string> uncached = ReadAll(bucket.Options(2));
  TempDir cache("spool-cache");
  std::ofstream(cache / "not-a-folder") << "x";
  DataLoaderOptions options = bucket.Options(2);
  options.cache_dir = (cache / "not-a-folder").string();
  LoaderCounters counters;
  EXPECT_TRUE(ReadAll(options, &counters) == uncached);
  EXPECT_EQ(counters.cache_fetched_bytes, 0u);
}

TEST(ShardCache, ACacheThatFillsUpWarnsAndTheStreamGoesOn) {
  Bucket bucket;
  const std::vector<std::string> uncached = ReadAll(bucket.Options(2));
  TempDir cache("spool-cache");
  DataLoaderOptions options = bucket.Options(2);
  options.cache_dir = cache.path().string();
  options.cache_fetch_ahead = 0;
  // A quota: files may not grow past 3.5 shards (writes then fail with EFBIG).
  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit quota = old_limit;
  quota.rlim_cur = bucket.shard_bytes / 2;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &quota), 0);
  LoaderCounters counters;
  ::testing::internal::CaptureStderr();
  std::vector<std::string> records = ReadAll(options, &counters);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  setrlimit(RLIMIT_FSIZE, &old_limit);
  signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(records == uncached);
  // One warning, naming the folder and the error.
  EXPECT_EQ(warnings.find("spool warning: shard cache " + options.cache_dir), 0u) << warnings;
  EXPECT_NE(warnings.find("File too large"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("spool warning", 1), std::string::npos) << warnings;
  EXPECT_EQ(counters.cache_fetched_bytes, 0u);
  EXPECT_TRUE(ListShardCache(options.cache_dir)->empty());
}

// Runs this binary's ShardCacheChild.Run with `env` added; returns its pid.
pid_t SpawnChild(const std::vector<std::string>& env) {
  std::vector<std::string> args = {"/proc/self/exe", "--gtest_filter=ShardCacheChild.Run"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> vars(env);
  for (char** e = environ; *e; ++e) vars.push_back(*e);
  std::vector<char*> envp;
  for (auto& var : vars) envp.push_back(var.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()), 0);
  return pid;
}

// A child: rank CHILD_RANK of CHILD_WORLD on one node, reading the dataset
// at CHILD_MANIFEST through CHILD_CACHE for two epochs; writes what it
// fetched into the cache and its records to CHILD_OUT. Does nothing when not
// started as a child.
TEST(ShardCacheChild, Run) {
  const Env env = CurrentEnv();
  if (!env.Get("CHILD_OUT")) return;
  auto store = std::make_shared<CountingStore>(std::make_shared<LocalStore>());
  if (env.Get("CHILD_SLOW")) store->delay = std::chrono::milliseconds(200);
  DataLoaderOptions options;
  options.inputs = {*env.Get("CHILD_MANIFEST")};
  options.store = store;
  options.rank = std::stoi(*env.Get("CHILD_RANK"));
  options.world_size = std::stoi(*env.Get("CHILD_WORLD"));
  options.seed = 7;
  options.epochs = 2;
  options.batch_size = 16;
  options.cache_dir = *env.Get("CHILD_CACHE");
  std::vector<std::string> records;
  LoaderCounters counters;
  records = ReadAll(options, &counters);
  std::ofstream out(*env.Get("CHILD_OUT"));
  out << counters.cache_fetched_bytes << "\n";
  for (const std::string& record : records) out << record.substr(0, record.find('-', record.find('-') + 1)) << "\n";
}

TEST(ShardCache, FourProcessesOfANodeFetchEachShardOnce) {
  Bucket bucket;
  TempDir cache("spool-cache");
  TempDir outputs("spool-cache-out");
  std::vector<pid_t> children;
  for (int rank = 0; rank < 4; ++rank) {
    children.push_back(SpawnChild(
        {"CHILD_OUT=" + (outputs / std::to_string(rank)).string(), "CHILD_MANIFEST=" + bucket.dataset.manifest_key,
         "CHILD_RANK=" + std::to_string(rank), "CHILD_WORLD=4", "CHILD_CACHE=" + cache.path().string(),
         "LOCAL_RANK=" + std::to_string(rank), "LOCAL_WORLD_SIZE=4"}));
  }
  uint64_t fetched = 0;
  std::multiset<std::string> records;
  for (int rank = 0; rank < 4; ++rank) {
    int status = 0;
    ASSERT_EQ(waitpid(children[rank], &status, 0), children[rank]);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << rank << " status " << status;
    std::ifstream in(outputs / std::to_string(rank));
    uint64_t bytes = 0;
    in >> bytes;
    fetched += bytes;
    for (std::string line; in >> line;) records.insert(line);
  }
  EXPECT_EQ(fetched, bucket.total_bytes);  // each shard fetched by one process, once
  EXPECT_EQ(records.size(), 2 * kShards * 40);
  for (const std::string& record : records) EXPECT_EQ(records.count(record), 2u) << record;
}

TEST(ShardCache, AFetchKilledMidwayLeavesNothingReadAsComplete) {
  Bucket bucket;
  TempDir cache("spool-cache");
  TempDir outputs("spool-cache-out");
  pid_t child =
      SpawnChild({"CHILD_OUT=" + (outputs / "killed").string(), "CHILD_MANIFEST=" + bucket.dataset.manifest_key,
                  "CHILD_RANK=0", "CHILD_WORLD=1", "CHILD_CACHE=" + cache.path().string(), "CHILD_SLOW=1"});
  // Wait for a fetch in flight, then kill the fetcher.
  bool seen = false;
  for (int i = 0; i < 600 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(cache.path(), error)) {
      if (entry.path().filename().string().find("spoolpart") != std::string::npos) seen = true;
    }
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(seen);
  DataLoaderOptions options = bucket.Options(2);
  options.cache_dir = cache.path().string();
  options.batch_size = 16;
  DataLoaderOptions plain = bucket.Options(2);
  EXPECT_TRUE(ReadAll(options) == ReadAll(plain));
  for (const auto& entry : std::filesystem::directory_iterator(cache.path())) {
    EXPECT_EQ(entry.path().string().find("spoolpart"), std::string::npos) << entry.path();
  }
  EXPECT_EQ(ListShardCache(options.cache_dir)->size(), kShards);
}

}  // namespace
}  // namespace spool::loader
