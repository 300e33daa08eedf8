// The loader suite on the memory and local stores, plus what only a local
// test can do: a store that stalls on purpose, and mem:// URLs.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "spool/core/cancel.h"
#include "spool/core/retry.h"
#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "spool/core/storage/registry.h"
#include "spool/records/loader/data_loader.h"
#include "tests/loader/loader_suite.h"
#include "tests/loader/test_dataset.h"
#include "tests/support/forwarding_store.h"
#include "tests/support/temp_dir.h"

namespace spool::testing {
using loader::BadShardPolicy;
using loader::DataLoader;
using loader::DataLoaderOptions;
using loader::LoaderCounters;
using loader::LoaderState;

namespace {

// One folder for the whole run, removed at exit.
std::string TempFolderKey(const std::string& test_name) {
  static const test_support::TempDir root("spool-loader-test");
  return root.Key(test_name);
}

std::atomic<int> bucket_counter{0};

INSTANTIATE_TEST_SUITE_P(
    Stores, LoaderSuite,
    ::testing::Values(
        StoreUnderTest{"memory",
                       [] {
                         return std::make_shared<MemoryStore>("loader-test-" +
                                                              std::to_string(bucket_counter.fetch_add(1)));
                       },
                       [](const std::string& test) { return "data/" + test; }},
        StoreUnderTest{"local", [] { return std::make_shared<LocalStore>(); }, TempFolderKey}),
    StoreName);

// A store whose reads wait until released: a network that has stalled.
// Readers opened either way (OpenRead, OpenListed) stall.
class StallingStore : public test_support::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  // Only reads that reach past `offset` stall (default: every read).
  void StallReadsPast(uint64_t offset) { stall_past_ = offset; }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override {
    SPOOL_ASSIGN_OR_RETURN(auto object, inner().OpenRead(key));
    return std::unique_ptr<ReadableObject>(new Stalling(this, std::move(object)));
  }
  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed) override {
    SPOOL_ASSIGN_OR_RETURN(auto object, inner().OpenListed(listed));
    return std::unique_ptr<ReadableObject>(new Stalling(this, std::move(object)));
  }

 private:
  class Stalling : public ReadableObject {
   public:
    Stalling(StallingStore* store, std::unique_ptr<ReadableObject> inner) : store_(store), inner_(std::move(inner)) {}
    const ObjectInfo& info() const override { return inner_->info(); }
    // Waits until released, or until the reader's work is cancelled, as a
    // real transport abandons a stalled request (core/cancel.h).
    Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
      if (offset + buffer.size() <= store_->stall_past_) return inner_->ReadAt(offset, buffer);
      const CancelToken cancel = CancelToken::Current();
      std::unique_lock lock(store_->mu_);
      while (!store_->released_) {
        if (cancel.cancelled()) return cancel.Check("stalled read");
        store_->cv_.wait_for(lock, std::chrono::milliseconds(10));
      }
      lock.unlock();
      return inner_->ReadAt(offset, buffer);
    }

   private:
    StallingStore* store_;
    std::unique_ptr<ReadableObject> inner_;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::atomic<uint64_t> stall_past_{0};
};

// A store where one object's reads fail for good after its first bytes: a
// shard that stays unreadable after the store's own retries, however it is
// opened (OpenRead, OpenListed). `error`, when given, is what they fail with.
class UnreadableShardStore : public test_support::ForwardingStore {
 public:
  UnreadableShardStore(std::shared_ptr<ObjectStore> inner, std::string bad_key, uint64_t readable_bytes,
                       Status error = OkStatus())
      : ForwardingStore(std::move(inner)),
        bad_key_(std::move(bad_key)),
        readable_bytes_(readable_bytes),
        error_(std::move(error)) {}
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override {
    SPOOL_ASSIGN_OR_RETURN(auto object, inner().OpenRead(key));
    return Wrap(key, std::move(object));
  }
  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed) override {
    SPOOL_ASSIGN_OR_RETURN(auto object, inner().OpenListed(listed));
    return Wrap(listed.key, std::move(object));
  }

 private:
  class Failing : public ReadableObject {
   public:
    Failing(std::unique_ptr<ReadableObject> inner, std::string url, uint64_t readable, Status error)
        : inner_(std::move(inner)), url_(std::move(url)), readable_(readable), error_(std::move(error)) {}
    const ObjectInfo& info() const override { return inner_->info(); }
    Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
      if (offset + buffer.size() > readable_) {
        if (!error_.ok()) return error_;
        return UnavailableError("GET " + url_ + " at offset " + std::to_string(offset) +
                                ": gave up after 8 attempts: connection reset");
      }
      return inner_->ReadAt(offset, buffer);
    }

   private:
    std::unique_ptr<ReadableObject> inner_;
    std::string url_;
    uint64_t readable_;
    Status error_;
  };

  std::unique_ptr<ReadableObject> Wrap(std::string_view key, std::unique_ptr<ReadableObject> object) {
    if (key != bad_key_) return object;
    return std::unique_ptr<ReadableObject>(new Failing(std::move(object), Describe(key), readable_bytes_, error_));
  }

  std::string bad_key_;
  uint64_t readable_bytes_;
  Status error_;
};

// A manifest's shard is opened from its size, so a store reports a shard
// gone or changed only when it is read: the loader names the shard and its
// manifest then (NotFound, DataLoss), as it did at an open. Another
// FailedPrecondition (here a 403, as for a skewed clock) is no change to the
// shard and passes as it is.
TEST(DataLoaderFaults, AManifestShardGoneOrChangedWhenReadNamesItsManifest) {
  MemoryStore::ClearBucket("loader-read-errors");
  auto memory = std::make_shared<MemoryStore>("loader-read-errors");
  DatasetSpec spec{"e/train", {10, 10, 10}};
  spec.write_manifest = true;
  auto dataset = WriteDataset(*memory, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  const std::string shard = memory->Describe(dataset->shard_keys[1]);
  const std::string manifest = memory->Describe(dataset->manifest_key);
  auto drain_with = [&](Status error) {
    DataLoaderOptions options;
    options.store = std::make_shared<UnreadableShardStore>(memory, dataset->shard_keys[1], 0, std::move(error));
    options.inputs = {dataset->manifest_key};
    auto loader = DataLoader::Open(options);
    EXPECT_TRUE(loader.ok()) << loader.status().ToString();
    std::vector<std::string> records;
    return loader.ok() ? Drain(**loader, &records) : loader.status();
  };
  Status gone = drain_with(NotFoundError("GET " + shard + ": NoSuchKey"));
  EXPECT_EQ(gone.code(), StatusCode::kNotFound) << gone.ToString();
  EXPECT_NE(gone.message().find("shard " + shard + " named in dataset manifest " + manifest), std::string::npos)
      << gone.ToString();

  Status changed = drain_with(FailedPreconditionError(shard + " is 99 bytes, not the 1 it had when opened"));
  EXPECT_EQ(changed.code(), StatusCode::kDataLoss) << changed.ToString();
  EXPECT_NE(changed.message().find("shard " + shard + " changed after dataset manifest " + manifest), std::string::npos)
      << changed.ToString();
  EXPECT_NE(changed.message().find("it says"), std::string::npos) << changed.ToString();

  RemoteError precondition;
  precondition.http_status = 412;
  Status replaced =
      drain_with(FailedPreconditionError("GET " + shard + ": PreconditionFailed").WithRemote(precondition));
  EXPECT_EQ(replaced.code(), StatusCode::kDataLoss) << replaced.ToString();

  RemoteError refused;
  refused.http_status = 403;
  Status skewed = drain_with(FailedPreconditionError("GET " + shard + ": RequestTimeTooSkewed").WithRemote(refused));
  EXPECT_EQ(skewed.code(), StatusCode::kFailedPrecondition) << skewed.ToString();
}

TEST(DataLoaderFaults, UnreadableShardFailsOrIsSkippedByPolicy) {
  MemoryStore::ClearBucket("loader-unreadable");
  auto memory = std::make_shared<MemoryStore>("loader-unreadable");
  auto dataset = WriteDataset(*memory, DatasetSpec{"u/train", {20, 20, 20}});
  ASSERT_TRUE(dataset.ok());
  auto store = std::make_shared<UnreadableShardStore>(memory, dataset->shard_keys[1], 0);
  DataLoaderOptions options;
  options.store = store;
  options.inputs = dataset->shard_keys;
  std::vector<std::string> records;
  {
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok());
    Status status = Drain(**loader, &records);
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
    EXPECT_NE(status.message().find(memory->Describe(dataset->shard_keys[1])), std::string::npos)
        << status.ToString();
  }
  options.bad_shard_policy = BadShardPolicy::kSkip;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok());
  records.clear();
  Status status = Drain(**loader, &records);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(records.size(), 40u);
  EXPECT_EQ((*loader)->Counters().skipped_shards, 1u);
  LoaderState state = (*loader)->State();
  ASSERT_EQ(state.truncated.size(), 1u);
  EXPECT_EQ(state.truncated[0].shard, 1u);
  EXPECT_EQ(state.truncated[0].records, 0u);
}

TEST(DataLoaderClose, WakesAWaitingNextWhileReadsAreStalled) {
  auto memory = std::make_shared<MemoryStore>("loader-test-stall");
  auto dataset = WriteDataset(*memory, DatasetSpec{"stall/train", {50, 50}});
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  auto stalling = std::make_shared<StallingStore>(memory);
  DataLoaderOptions options;
  options.store = stalling;
  options.inputs = dataset->shard_keys;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*loader)->Close();
  });
  auto batch = (*loader)->Next();  // waits: every read is stalled
  closer.join();
  EXPECT_EQ(batch.status().code(), StatusCode::kCancelled) << batch.status().ToString();
  stalling->Release();  // let the stalled fetch tasks finish
}

// A stream's first fetch hands its records over after its first 64 KiB
// (pipeline.cc, kFirstFetchBytes), not after a whole fetch_chunk: the first
// batch does not wait for a shard's later bytes. Here every read past the
// shard's first 192 KiB stalls until released, and the first batch, 16
// records of 1 KiB, must come without them.
TEST(DataLoaderFirstBatch, ComesFromAStreamsFirstBytesWithoutWaitingForAWholeFetch) {
  auto memory = std::make_shared<MemoryStore>("loader-test-first-fetch");
  DatasetSpec spec{"first/train", {2000}};
  spec.record_bytes = 1024;
  auto dataset = WriteDataset(*memory, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  auto stalling = std::make_shared<StallingStore>(memory);
  stalling->StallReadsPast(192 << 10);
  DataLoaderOptions options;
  options.store = stalling;
  options.inputs = dataset->shard_keys;
  options.batch_size = 16;
  options.shuffle_buffer = 0;
  options.interleave = 1;
  options.read_ahead = 256 << 10;  // reader chunks of 64 KiB
  options.fetch_chunk = 1 << 20;   // a whole fetch needs bytes past the stall
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  auto next = std::async(std::launch::async, [&] { return (*loader)->Next(); });
  // Not a timing: a batch that needs a stalled byte never comes before the
  // release, and one that does not comes at once; 30 s only ends the wait.
  const bool came_while_stalled = next.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  stalling->Release();
  auto batch = next.get();
  EXPECT_TRUE(came_while_stalled) << "the first batch waited for bytes past the stream's first fetch";
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_TRUE(batch->has_value());
  std::vector<std::string> records((*batch)->records.begin(), (*batch)->records.end());
  EXPECT_EQ(records, std::vector<std::string>(dataset->records.begin(), dataset->records.begin() + 16));
}

TEST(DataLoaderClose, ResumeAfterCloseStartsNothing) {
  auto memory = std::make_shared<MemoryStore>("loader-test-resume-closed");
  auto dataset = WriteDataset(*memory, DatasetSpec{"closed/train", {20, 20}});
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  for (bool elastic : {false, true}) {
    SCOPED_TRACE(elastic ? "elastic" : "fixed");
    DataLoaderOptions options;
    options.store = memory;
    options.inputs = dataset->shard_keys;
    options.batch_size = 4;
    if (elastic) {
      options.partitions = 2;
      options.global_batch_size = 4;
    }
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    ASSERT_TRUE((*loader)->Next().ok());
    const LoaderState state = (*loader)->State();
    (*loader)->Close();
    Status resumed = (*loader)->Resume(state);
    EXPECT_EQ(resumed.code(), StatusCode::kFailedPrecondition) << resumed.ToString();
    // Nothing came back to life: the closed pipeline still answers Cancelled.
    auto batch = (*loader)->Next();
    EXPECT_FALSE(batch.ok() && batch->has_value());
  }
}

TEST(DataLoaderUrls, GlobOverMemUrls) {
  MemoryStore::ClearBucket("loader-url-test");
  MemoryStore store("loader-url-test");
  auto dataset = WriteDataset(store, DatasetSpec{"ds/train", {3, 4, 5}});
  ASSERT_TRUE(dataset.ok());
  DataLoaderOptions options;
  options.inputs = {"mem://loader-url-test/" + dataset->glob};
  options.batch_size = 100;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  EXPECT_EQ((*loader)->shards().size(), 3u);
  EXPECT_EQ((*loader)->shards()[0].url, "mem://loader-url-test/" + dataset->shard_keys[0]);
  std::vector<std::string> records;
  ASSERT_TRUE(Drain(**loader, &records).ok());
  EXPECT_EQ(records.size(), 12u);
}

TEST(DataLoaderOptionsCheck, RejectsNonsense) {
  DataLoaderOptions options;
  options.inputs = {"mem://loader-url-test/none"};
  options.batch_size = 0;
  EXPECT_EQ(DataLoader::Open(options).status().code(), StatusCode::kInvalidArgument);
  options.batch_size = 1;
  options.local_workers = 2;
  options.local_worker = 2;
  EXPECT_EQ(DataLoader::Open(options).status().code(), StatusCode::kInvalidArgument);
  options.local_worker = 1;
  options.epochs = 2;
  options.start_epoch = 2;
  auto past_the_end = DataLoader::Open(options);
  EXPECT_EQ(past_the_end.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(past_the_end.status().message().find("start_epoch (2) must be less than epochs (2)"), std::string::npos)
      << past_the_end.status().ToString();
  options.start_epoch = 1;
  options.start_position = 5;
  options.deterministic = false;  // no fixed order to replay up to a position
  auto sloppy = DataLoader::Open(options);
  EXPECT_EQ(sloppy.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sloppy.status().message().find("start_position needs deterministic mode"), std::string::npos)
      << sloppy.status().ToString();
}

TEST(DataLoaderWorkers, LocalWorkersSplitARank) {
  MemoryStore store("loader-local-workers");
  auto dataset = WriteDataset(store, DatasetSpec{"lw/train", {7, 11, 2}});
  ASSERT_TRUE(dataset.ok());
  std::vector<std::string> all;
  for (int rank = 0; rank < 2; ++rank) {
    for (int local = 0; local < 3; ++local) {
      DataLoaderOptions options;
      options.store = std::make_shared<MemoryStore>("loader-local-workers");
      options.inputs = dataset->shard_keys;
      options.rank = rank;
      options.world_size = 2;
      options.local_workers = 3;
      options.local_worker = local;
      auto loader = DataLoader::Open(options);
      ASSERT_TRUE(loader.ok()) << loader.status().ToString();
      EXPECT_EQ((*loader)->State().workers, 6u);
      ASSERT_TRUE(Drain(**loader, &all).ok());
    }
  }
  std::sort(all.begin(), all.end());
  auto expected = dataset->records;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(all, expected);
}

TEST(DataLoaderWorkers, EpochRecordsIsWhatEachWorkerDelivers) {
  MemoryStore store("loader-epoch-records");
  auto dataset = WriteDataset(store, DatasetSpec{"er/train", {7, 11, 2, 9}});
  ASSERT_TRUE(dataset.ok());
  for (bool count_records : {false, true}) {
    SCOPED_TRACE(count_records ? "counted at open" : "counts unknown");
    uint64_t total = 0;
    for (int local = 0; local < 3; ++local) {
      DataLoaderOptions options;
      options.store = std::make_shared<MemoryStore>("loader-epoch-records");
      options.inputs = dataset->shard_keys;  // plain keys: no manifest, no index
      options.rank = 0;
      options.world_size = 1;
      options.local_workers = 3;
      options.local_worker = local;
      options.count_records = count_records;
      options.seed = 5;
      options.epochs = 2;
      auto loader = DataLoader::Open(options);
      ASSERT_TRUE(loader.ok()) << loader.status().ToString();
      if (!count_records) {
        EXPECT_FALSE((*loader)->EpochRecords(0, local).has_value());
        continue;
      }
      std::vector<std::string> records;
      ASSERT_TRUE(Drain(**loader, &records).ok());
      const auto epoch0 = (*loader)->EpochRecords(0, local);
      const auto epoch1 = (*loader)->EpochRecords(1, local);
      ASSERT_TRUE(epoch0 && epoch1);
      EXPECT_EQ(records.size(), *epoch0 + *epoch1);
      total += *epoch0;
    }
    if (count_records) {
      EXPECT_EQ(total, dataset->records.size());
    }
  }
}

TEST(DataLoaderCounters, ReportRetriesAndThrottlesSinceOpen) {
  MemoryStore store("loader-counters");
  auto dataset = WriteDataset(store, DatasetSpec{"c/train", {4}});
  ASSERT_TRUE(dataset.ok());
  DataLoaderOptions options;
  options.store = std::make_shared<MemoryStore>("loader-counters");
  options.inputs = dataset->shard_keys;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok());
  // Two failed attempts through the store's retry loop (counted as a
  // backend counts them, see CountingRetry): a 503, then a timeout.
  RetryEnvironment env;
  env.sleep = [](std::chrono::milliseconds) {};
  env.on_retry = [&](const Status& failure, int, std::chrono::milliseconds) {
    options.store->counters().CountRetry(failure);
  };
  int attempt = 0;
  Status status = Retry(RetryPolicy{}, Idempotency::kIdempotent, "GET test", [&]() -> Status {
    switch (attempt++) {
      case 0: return UnavailableError("busy").WithRemote(RemoteError{503, "SlowDown", "id"});
      case 1: return DeadlineExceededError("stalled");
      default: return OkStatus();
    }
  }, env);
  ASSERT_TRUE(status.ok());
  LoaderCounters counters = (*loader)->Counters();
  EXPECT_GE(counters.retries, 2u);
  EXPECT_GE(counters.throttles, 1u);
  std::vector<std::string> records;
  ASSERT_TRUE(Drain(**loader, &records).ok());
  counters = (*loader)->Counters();
  EXPECT_EQ(counters.records, 4u);
  EXPECT_EQ(counters.bytes, 4u * 64);
  EXPECT_GT(counters.object_bytes, 0u);
  EXPECT_EQ(counters.buffered_bytes, 0u);
}

// Stands in for a cloud backend's store: the first open of each object
// fails with a 503 and is retried through the options' retry environment,
// counted into the store's counters as the backends count.
class FirstOpenFailsStore : public MemoryStore {
 public:
  FirstOpenFailsStore(std::string bucket, RetryOptions retry)
      : MemoryStore(std::move(bucket)), retry_(std::move(retry)) {}
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override {
    auto attempt = [&]() -> Result<std::unique_ptr<ReadableObject>> {
      std::lock_guard lock(mu_);
      if (failed_.insert(std::string(key)).second) {
        RemoteError throttled;
        throttled.http_status = 503;
        return UnavailableError("injected 503").WithRemote(throttled);
      }
      return MemoryStore::OpenRead(key);
    };
    return Retry(retry_.policy, Idempotency::kIdempotent, "GET", attempt, retry_.environment);
  }

 private:
  RetryOptions retry_;
  std::mutex mu_;
  std::set<std::string> failed_;
};

TEST(DataLoaderCounters, EachLoaderCountsOnlyItsOwnRetries) {
  // gs:// stands in for a cloud scheme (this binary links no backend):
  // buckets named flaky-* throttle each object's first open.
  RegisterStoreFactory("gs", [](const Url& url, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
    if (!url.bucket.starts_with("flaky")) {
      return std::shared_ptr<ObjectStore>(std::make_shared<MemoryStore>(url.bucket));
    }
    RetryOptions retry = CountingRetry(options);
    retry.environment.sleep = [](std::chrono::milliseconds) {};
    return std::shared_ptr<ObjectStore>(std::make_shared<FirstOpenFailsStore>(url.bucket, retry));
  });
  auto options_for = [](const std::string& bucket) -> Result<DataLoaderOptions> {
    MemoryStore::ClearBucket(bucket);
    MemoryStore store(bucket);
    SPOOL_ASSIGN_OR_RETURN(Dataset dataset, WriteDataset(store, DatasetSpec{"c/train", {4, 3}}));
    DataLoaderOptions options;
    for (const std::string& key : dataset.shard_keys) options.inputs.push_back("gs://" + bucket + "/" + key);
    options.batch_size = 2;
    return options;
  };
  Result<DataLoaderOptions> steady_options = options_for("steady-loader-counters");
  Result<DataLoaderOptions> flaky_options = options_for("flaky-loader-counters");
  ASSERT_TRUE(steady_options.ok() && flaky_options.ok());
  // Both loaders are open while the flaky one retries: process-wide totals
  // would show its retries in both.
  auto steady = DataLoader::Open(*steady_options);
  auto flaky = DataLoader::Open(*flaky_options);
  ASSERT_TRUE(steady.ok()) << steady.status().ToString();
  ASSERT_TRUE(flaky.ok()) << flaky.status().ToString();
  std::vector<std::string> flaky_records, steady_records;
  ASSERT_TRUE(Drain(**flaky, &flaky_records).ok());
  ASSERT_TRUE(Drain(**steady, &steady_records).ok());
  EXPECT_EQ(flaky_records.size(), 7u);
  EXPECT_EQ(steady_records.size(), 7u);

  const LoaderCounters flaky_counters = (*flaky)->Counters();
  EXPECT_GE(flaky_counters.retries, 2u) << "each of its two shards was opened at least once";
  EXPECT_EQ(flaky_counters.throttles, flaky_counters.retries) << "every retry followed a 503";
  const LoaderCounters steady_counters = (*steady)->Counters();
  EXPECT_EQ(steady_counters.retries, 0u);
  EXPECT_EQ(steady_counters.throttles, 0u);
}

}  // namespace
}  // namespace spool::testing
