// DataLoader: streams a dataset of TFRecord shards from any ObjectStore into
// a training loop -- split over the workers of a distributed job, shuffled,
// batched, prefetched within a memory budget, and resumable mid-epoch.
//
//   DataLoaderOptions options;
//   options.inputs = {"s3://bucket/train.manifest.json"};
//   options.batch_size = 256;
//   SPOOL_ASSIGN_OR_RETURN(auto loader, DataLoader::Open(options));
//   if (checkpoint) SPOOL_RETURN_IF_ERROR(loader->Resume(*LoaderState::Decode(saved)));
//   while (true) {
//     SPOOL_ASSIGN_OR_RETURN(std::optional<Batch> batch, loader->Next());
//     if (!batch) break;                    // every epoch delivered
//     for (std::string_view record : batch->records) Train(record);
//     if (time_to_checkpoint) Save(loader->State().Encode());
//   }
//
// Order: each epoch the shards are ordered from (seed, epoch) and split over
// the workers (plan.h); a worker reads `interleave` of its segments at once,
// taking `interleave_block` records from each in turn, passes them through a
// shuffle buffer seeded from (seed, epoch, worker) and cuts batches. The
// sequence depends only on the inputs, seed, epoch, worker identity and the
// [order] options -- never on timing: the parallel part only prefetches.
// Batches never span epochs.
//
// Prefetch: fetch tasks on the executor read the open shards (each reader
// with its own read-ahead), decompress and parse, a few records' worth of
// bytes at a time; the assembler (run by whichever thread brings new data or
// takes a batch) moves records into the shuffle buffer and ready batches,
// keeping up to prefetch_batches ready. Everything held is counted against
// memory_budget; when it is full, fetching pauses until batches are taken.
// Nothing spins: waiting threads sleep on condition variables.
//
// Resume: State() is (seed, epoch, records delivered in the epoch, worker).
// Resume(state) replays the record order on record numbers only -- no data
// is read for it when record counts are known (manifest or index files) --
// then reads just the records that were in the shuffle buffer and continues
// each open shard at its record (SeekToRecord: a jump with an index file,
// else records are read and dropped undecoded). Without known counts, the
// shards this worker reached in the epoch are counted by reading them once.
//
// Elastic mode (options.partitions > 0, partitions.h): the order is fixed by
// the partition count instead of the job's shape, so that the global batch
// sequence is the same for any number of workers dividing it, and a state
// saved at one world size resumes at another.
//
// Errors: Open fails for bad inputs; a shard is checked against its manifest
// (NotFound, DataLoss) only when a worker reads it.
// Next() returns, after the batches ready before it, the first error of the
// epoch (it names the shard URL and byte offset); with BadShardPolicy::kSkip
// bad shards are cut short instead and counted. Close() (or destruction)
// returns promptly: it stops fetching, wakes a waiting Next() (which then
// returns Cancelled), cancels the requests in flight and waits for every
// task the loader started; none runs after Close() returns. A Resume()
// after (or racing) Close() starts nothing and fails with FailedPrecondition.
//
// Records: a batch's records are views of reference-counted blocks that the
// loader fills as it reads (record_pool.h, record_list.h), not strings of
// their own: the loader makes no heap allocation per record. A Batch keeps
// its blocks alive after the loader is closed or destroyed; dropping it
// returns them to the loader's pool. RecordList::CopyOut() gives strings.
//
// Metrics: an open loader reports its counters (owner="loader") to the
// process's metrics registry (spool/metrics/registry.h; docs/metrics.md), and
// its own requests when its inputs are URLs.
//
// Threading: Next, State, Resume and Counters are called from one consumer
// thread at a time; Close, Counters and Requests may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "spool/core/status.h"
#include "spool/metrics/registry.h"
#include "spool/records/example.pb.h"
#include "spool/records/loader/inputs.h"
#include "spool/records/loader/loader_state.h"
#include "spool/records/loader/options.h"
#include "spool/records/loader/record_list.h"
#include "spool/records/loader/worker_env.h"
#include "spool/records/record_pool.h"

namespace spool::loader {

struct Batch {
  uint64_t epoch = 0;
  // Payloads in delivery order: views valid while this list (or a RecordRef
  // copied from it) lives, the loader's lifetime regardless.
  RecordList records;
  std::vector<tensorflow::Example> examples;  // parsed records, with parse_examples
};

// Totals since Open; rates over the time since Open.
struct LoaderCounters {
  uint64_t records = 0;             // delivered by Next()
  uint64_t bytes = 0;               // payload bytes delivered
  double seconds = 0;               // since Open
  double records_per_second = 0;
  double bytes_per_second = 0;
  double wait_seconds = 0;          // time Next() waited for data: the input-bound figure
  uint64_t object_bytes = 0;        // bytes read from the store (compressed, if so)
  // Requests the stores' retry loop repeated since Open, and how many of
  // those were throttling (429, 503, SlowDown). Only this loader's requests
  // when its inputs are URLs (it opens its stores with counters of its own,
  // DataLoaderOptions::store_options.counters unless the caller set them);
  // with DataLoaderOptions::store, that store's counters, which also count
  // whoever else uses that store.
  uint64_t retries = 0;
  uint64_t throttles = 0;
  uint64_t skipped_records = 0;     // known records lost to bad shards (kSkip)
  uint64_t skipped_shards = 0;      // shards cut short (kSkip)
  uint64_t buffered_bytes = 0;      // held now: records, batches, read-ahead
  uint64_t peak_buffered_bytes = 0;
  uint64_t budget_overruns = 0;     // fetches let past a full budget to avoid a stall
  uint64_t memory_budget = 0;       // DataLoaderOptions::memory_budget
  // The record pool (record_pool.h): blocks made since Open (flat in steady
  // state; few for a loader that reuses the pool of one before it), and bytes
  // in blocks referenced now (by the loader or by batches the caller holds)
  // or idle on the free list.
  uint64_t record_blocks_made = 0;
  uint64_t record_bytes_live = 0;
  uint64_t record_bytes_idle = 0;
  // Chunk buffers the shard readers took from the system since Open (or
  // the last Restore): flat in steady state, since a new shard's reader
  // reuses those of the readers before it.
  uint64_t read_buffers_made = 0;
  HistogramCounts next_wait;        // how long each Next() took: its waits for data, as a distribution
  // The shard cache (DataLoaderOptions::cache_dir), this loader's share.
  uint64_t cache_hits = 0;           // shards read from the cache
  uint64_t cache_misses = 0;         // shards not there when asked for
  uint64_t cache_fetched_bytes = 0;  // fetched from the store into the cache
  uint64_t cache_evicted_bytes = 0;  // removed from the cache to make room
  uint64_t cache_fetch_ahead = 0;    // shards queued or being fetched ahead now
};

class Pipeline;
class PartitionSet;
class ShardCache;
struct CounterBlock;

class DataLoader {
 public:
  // Resolves the inputs and the worker identity and starts prefetching
  // epoch 0. InvalidArgument for bad options (in elastic mode also for
  // partitions the job's workers do not divide), NotFound for a missing
  // input or manifest.
  static Result<std::unique_ptr<DataLoader>> Open(DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch; std::nullopt once every epoch has been delivered.
  Result<std::optional<Batch>> Next();

  // Where the consumer is: what a checkpoint stores.
  LoaderState State() const;
  // Continues from `state` (taken by a loader with the same inputs and
  // [order] options): the batches after it are exactly those an
  // uninterrupted run delivers after that point. InvalidArgument for a state
  // of other inputs (its fingerprint differs; a state without one is not
  // checked), another seed or worker. In elastic mode any worker's state of
  // the same seed and partitions is accepted, from any world size: the job's
  // remaining records of the epoch are each delivered once.
  Status Resume(const LoaderState& state);

  // The fingerprint of this loader's inputs that State() carries
  // (LoaderState::fingerprint).
  const std::string& fingerprint() const { return fingerprint_; }
  // The fingerprint a loader opened with `options` would have, without
  // opening one: reads each manifest and lists each glob once, as Open does.
  static Result<std::string> InputsFingerprint(const DataLoaderOptions& options);

  // Paused, the loader starts no read-ahead: a checkpoint saved before a
  // preemption gets the network and the CPU. Next() still fetches what it
  // needs, so a paused loader is slower, never stuck. Thread-safe.
  void PausePrefetch(bool paused);

  // Stops prefetching, wakes a waiting Next() and waits for the loader's
  // tasks (their requests are cancelled). Idempotent; thread-safe.
  void Close();

  // Records worker `worker` (of this job shape: rank * local_workers +
  // local_worker) reads in `epoch`, before any BadShardPolicy::kSkip cuts;
  // nullopt when some shard's record count is unknown (see count_records).
  // Lets a caller that interleaves several loaders (torch DataLoader
  // workers) know where each one's stream ends.
  std::optional<uint64_t> EpochRecords(uint64_t epoch, uint64_t worker) const;
  uint64_t workers() const;  // world_size * local_workers

  LoaderCounters Counters() const;
  // What the loader's requests did, per operation (core/request_counters.h):
  // its own requests when its inputs are URLs; with DataLoaderOptions::store,
  // that store's counters, which count whoever else uses the store.
  RequestCounts Requests() const;
  const WorkerIdentity& worker() const { return worker_; }
  const std::vector<ShardInfo>& shards() const { return *shards_; }
  // The pool the batches' records live in; outlives the loader while held.
  // Given to the loader opened after this one (DataLoaderOptions::record_pool),
  // it lends that one the blocks this one filled (unless the caller still
  // holds many of them).
  std::shared_ptr<RecordPool> record_pool() const;

 private:
  DataLoader(DataLoaderOptions options, WorkerIdentity worker, std::shared_ptr<std::vector<ShardInfo>> shards,
             std::string fingerprint);
  Status Start(const LoaderState& state);
  Status OpenCache();
  uint64_t worker_index() const;
  void RegisterMetrics();

  DataLoaderOptions options_;
  WorkerIdentity worker_;
  std::shared_ptr<std::vector<ShardInfo>> shards_;
  std::string fingerprint_;  // of the inputs as resolved, before any counting
  std::shared_ptr<CounterBlock> counters_;
  std::shared_ptr<ShardCache> cache_;  // null without a cache_dir
  // Replaced by Resume on the consumer thread; swap_mu_ guards the
  // replacement against Counters() and Close() on other threads.
  mutable std::mutex swap_mu_;
  bool closed_ = false;                       // guarded by swap_mu_; set once by Close()
  std::shared_ptr<Pipeline> pipeline_;        // a fixed job shape
  std::unique_ptr<PartitionSet> partitions_;  // elastic mode (options_.partitions > 0)
  std::atomic<bool> paused_{false};
  // Last: removed from the metrics registry before anything it reads goes.
  metrics::MetricsRegistry::Registration metrics_;
};

}  // namespace spool::loader
