// What a job start costs the store: 64 simulated workers open one dataset
// manifest of 1,000 shards. Each worker must touch only the shards it reads,
// when it reads them, so the whole job makes O(workers + shards) metadata
// requests, not O(workers x shards) (docs/loader.md has the arithmetic for
// 1,000 workers and 100,000 shards).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "spool/core/storage/memory_store.h"
#include "spool/records/loader/data_loader.h"
#include "tests/loader/test_dataset.h"
#include "tests/support/forwarding_store.h"

namespace spool::testing {
using loader::DataLoader;
using loader::DataLoaderOptions;

namespace {

// Counts the requests an S3 store would make for each call: Stat and
// OpenRead are one HEAD each (OpenRead pins the object's size and version),
// OpenListed of a small object none (the listing or manifest pinned it),
// List one LIST, each ReadAt one ranged GET.
class CountingStore : public test_support::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

  std::atomic<uint64_t> heads{0};
  std::atomic<uint64_t> lists{0};
  std::atomic<uint64_t> gets{0};
  std::atomic<uint64_t> shard_heads{0};  // HEADs of keys ending in .tfrecord
  // Requests per key (HEADs and GETs; LISTs under their prefix).
  std::map<std::string, uint64_t> TakeByKey() {
    std::lock_guard lock(mu_);
    return std::exchange(by_key_, {});
  }

  Result<ObjectInfo> Stat(std::string_view key) override {
    Count(heads, key);
    return inner().Stat(key);
  }
  Result<ListPage> List(const ListOptions& options) override {
    Count(lists, options.prefix);
    return inner().List(options);
  }
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override {
    Count(heads, key);
    SPOOL_ASSIGN_OR_RETURN(auto object, inner().OpenRead(key));
    return std::unique_ptr<ReadableObject>(new Counted(this, std::string(key), std::move(object)));
  }
  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed) override {
    SPOOL_ASSIGN_OR_RETURN(auto object, inner().OpenListed(listed));
    return std::unique_ptr<ReadableObject>(new Counted(this, listed.key, std::move(object)));
  }

 private:
  class Counted : public ReadableObject {
   public:
    Counted(CountingStore* store, std::string key, std::unique_ptr<ReadableObject> inner)
        : store_(store), key_(std::move(key)), inner_(std::move(inner)) {}
    const ObjectInfo& info() const override { return inner_->info(); }
    Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
      store_->Count(store_->gets, key_);
      return inner_->ReadAt(offset, buffer);
    }

   private:
    CountingStore* store_;
    std::string key_;
    std::unique_ptr<ReadableObject> inner_;
  };

  void Count(std::atomic<uint64_t>& counter, std::string_view key) {
    counter.fetch_add(1);
    if (&counter == &heads && key.ends_with(".tfrecord")) shard_heads.fetch_add(1);
    std::lock_guard lock(mu_);
    ++by_key_[std::string(key)];
  }

  std::mutex mu_;
  std::map<std::string, uint64_t> by_key_;
};

TEST(LoaderStartup, SixtyFourWorkersOverAThousandShardsCostWorkersPlusShardsRequests) {
  constexpr int kWorkers = 64;
  constexpr size_t kShards = 1000;
  auto memory = std::make_shared<MemoryStore>("startup-requests");
  DatasetSpec spec{"train", std::vector<uint64_t>(kShards, 3)};
  spec.record_bytes = 32;
  spec.write_manifest = true;
  auto dataset = WriteDataset(*memory, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  auto store = std::make_shared<CountingStore>(memory);

  const std::set<std::string> shard_keys(dataset->shard_keys.begin(), dataset->shard_keys.end());
  uint64_t other_requests = 0;  // the manifest's
  std::set<std::string> delivered;
  for (int worker = 0; worker < kWorkers; ++worker) {
    DataLoaderOptions options;
    options.store = store;
    options.inputs = {dataset->manifest_key};
    options.rank = worker;
    options.world_size = kWorkers;
    options.seed = 7;
    options.batch_size = 8;
    options.read_ahead = 64 << 10;
    options.fetch_chunk = 4 << 10;
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    std::vector<std::string> records;
    ASSERT_TRUE(Drain(**loader, &records).ok());
    for (std::string& record : records) EXPECT_TRUE(delivered.insert(std::move(record)).second);
    uint64_t shards_touched = 0, others = 0;
    for (const auto& [key, requests] : store->TakeByKey()) {
      if (shard_keys.count(key)) {
        ++shards_touched;
      } else {
        others += requests;
      }
    }
    // A worker's share is 1000/64 of the records, so 16 or 17 shards (one
    // more when a cut falls inside a shard at both ends).
    EXPECT_LE(shards_touched, 18u) << "worker " << worker;
    // The manifest: a HEAD and a GET or so, never one request per shard.
    EXPECT_LE(others, 4u) << "worker " << worker;
    other_requests += others;
  }
  EXPECT_EQ(delivered.size(), dataset->records.size());
  // Every worker's share is a contiguous cut of the records, so at most one
  // shard per boundary is opened by two workers.
  // A shard is opened from the manifest's size, with no HEAD: only its GETs.
  EXPECT_EQ(store->shard_heads.load(), 0u) << "shard HEADs over the whole job";
  EXPECT_LE(store->gets.load(), other_requests + kShards + kWorkers) << "GETs over the whole job";
  // Recorded for the docs' arithmetic.
  std::printf("64 workers x 1000 shards: %llu HEAD, %llu LIST, %llu GET; %llu for the manifest\n",
              static_cast<unsigned long long>(store->heads.load()), static_cast<unsigned long long>(store->lists.load()),
              static_cast<unsigned long long>(store->gets.load()), static_cast<unsigned long long>(other_requests));
}

}  // namespace
}  // namespace spool::testing
