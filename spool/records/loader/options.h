// DataLoaderOptions: everything that shapes what a DataLoader delivers and
// how hard it works to deliver it.
//
// The sequence of records a worker sees depends only on the inputs, the
// seed, the epoch, the worker identity (rank, world size, local worker) and
// the options marked [order] below; the others change speed and memory, never
// the sequence.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spool/core/executor.h"
#include "spool/core/storage/object_store.h"
#include "spool/core/storage/registry.h"
#include "spool/records/record_pool.h"

namespace spool::loader {

// What to do with a shard that cannot be read to its end: a corrupt record, a
// truncated shard, or a read that stays unavailable after the store's retries.
enum class BadShardPolicy {
  kFail,  // end the epoch with an error naming the shard URL and byte offset
  kSkip,  // drop the rest of that shard, count it, record it in State()
};

// Which cached shard goes first when the shard cache is full.
enum class CachePolicy {
  kNextUse,  // the one whose next use by this node is furthest (Belady)
  kLru,      // the one used least recently by any loader of this node
};

struct DataLoaderOptions {
  // [order] Shard URLs, globs ("s3://b/train-*.tfrecord.gz", "/data/*.tfrecord",
  // "**" crosses '/'), or dataset manifests ("s3://b/train.manifest.json"),
  // in any mix. Shards are de-duplicated and sorted by URL (manifest shards
  // keep the manifest's order). Compression follows each shard's extension.
  std::vector<std::string> inputs;
  // When set, inputs are keys inside this store instead of URLs (tests, or a
  // store the caller configured itself). Otherwise each input is opened with
  // OpenLocation(input, store_options); store_options.counters left empty
  // gets counters of this loader's own (see LoaderCounters::retries).
  std::shared_ptr<ObjectStore> store;
  StoreOptions store_options;

  // [order] Worker identity. Unset: read from the launcher's environment
  // (see worker_env.h); no launcher found means rank 0 of 1.
  std::optional<int> rank;
  std::optional<int> world_size;
  // [order] Loaders per rank (threads or processes of one rank, each with its
  // own DataLoader): worker = rank * local_workers + local_worker.
  int local_workers = 1;
  int local_worker = 0;

  // [order] Order and batching.
  uint64_t seed = 0;
  bool shuffle_shards = true;      // per-epoch shard order from seed + epoch
  uint64_t shuffle_buffer = 1024;  // records; 0 or 1: no shuffling
  uint64_t batch_size = 32;
  bool drop_remainder = false;     // drop each epoch's last partial batch
  uint64_t epochs = 1;             // 0: forever
  // Where Open starts: `start_epoch` (< epochs, unless epochs is 0) at
  // LoaderState::position `start_position` (which needs deterministic mode),
  // as a Resume to that point right after Open would continue, without
  // first starting epoch 0 and throwing its reads away. A caller that opens
  // a loader per epoch (spool.torch's StreamingDataset does) opens each at
  // its own epoch. A point the caller worked out: to continue a saved
  // LoaderState, Resume() it, which checks that it is this loader's and
  // keeps BadShardPolicy::kSkip's cuts.
  uint64_t start_epoch = 0;
  uint64_t start_position = 0;
  int interleave = 4;              // shards read at once (cycle length)
  int interleave_block = 1;        // records taken from a shard per turn

  // Deterministic (the default): records are taken from the open shards in
  // a fixed turn, so the sequence never depends on timing, and Resume() is
  // exact. false: when the shard whose turn it is has nothing ready, take
  // from another open shard instead (faster when one shard stalls); every
  // record is still delivered once per epoch, but the order varies from run
  // to run and Resume() is refused (FailedPrecondition).
  bool deterministic = true;

  // [order] Elastic mode, off at 0: the epoch is cut into `partitions`
  // fixed virtual workers, each with its own shuffle buffer (shuffle_buffer
  // records each) and batches of global_batch_size / partitions records; a
  // worker owns a contiguous run of partitions and each Next() joins one
  // batch from each. The job's global batch at step s (the workers' batches
  // in worker order) is then the same for any number of workers that divides
  // `partitions`, and State() can be resumed on any such number (docs/loader.md,
  // "Elastic restarts"). Needs every shard's record count (a manifest or index
  // files; otherwise shards are counted at open). batch_size is not used.
  uint64_t partitions = 0;
  uint64_t global_batch_size = 0;  // records per step over the whole job; a multiple of partitions

  // [order] BadShardPolicy::kSkip makes the delivered records depend on which
  // shards are bad; the skips are recorded in State() so resume matches.
  BadShardPolicy bad_shard_policy = BadShardPolicy::kFail;

  // Whether to decode each record as a tf.train.Example on the executor
  // (Batch::examples). A record that is not an Example is DataLoss.
  bool parse_examples = false;
  // [order] Count every shard's records at open even when the plan could do
  // without (shards given as URLs, without a manifest or index files): the
  // records are then cut evenly over the workers, and EpochRecords() knows
  // every worker's share. Costs one read of each such shard at open.
  bool count_records = false;

  // Speed and memory.
  // Bytes the loader may hold at once: fetched records, the shuffle buffer,
  // ready batches and the readers' read-ahead. Must hold the shuffle buffer.
  uint64_t memory_budget = 256ull << 20;
  // Per open shard: bytes read before needed (within a third of
  // memory_budget). Remote and compressed shards only: local uncompressed
  // ones are read as needed, into the record pool (docs/loader.md).
  uint64_t read_ahead = 8ull << 20;
  uint64_t fetch_chunk = 1ull << 20;  // bytes one fetch task decodes at a time
  int prefetch_batches = 4;           // ready batches kept queued
  int prefetch_shards = 1;            // shards opened before their turn
  Executor* executor = nullptr;       // default: DefaultExecutor()
  // Where the loader keeps its records (record_pool.h). Empty: a pool of its
  // own. A caller that opens loaders one after another, an epoch each
  // (spool.torch's StreamingDataset does), may give each the pool of the
  // one before (DataLoader::record_pool()): it reuses the blocks that one
  // filled, so no epoch maps and faults in new pages or unmaps them at its
  // end. One loader at a time: a loader counts every referenced block of its
  // pool against its budget, so two running at once would count each
  // other's; a pool of which more than a quarter of memory_budget is still
  // referenced (records of the last loader that the caller keeps) is not
  // reused, and the loader makes its own. The pool's block size stays the
  // one it was made with.
  std::shared_ptr<records::RecordPool> record_pool;

  // Local shard cache, off by default (docs/loader.md, "Shard cache"): whole
  // shards kept on local disk, shared by every loader of the node that names
  // the same folder, across epochs and restarts. Empty: SPOOL_CACHE_DIR, if
  // set. Changes speed, never the records.
  std::string cache_dir;
  // Bytes the node's cache may hold; 0: SPOOL_CACHE_LIMIT ("200G", "512M"),
  // else no limit but the disk's.
  uint64_t cache_limit = 0;
  CachePolicy cache_policy = CachePolicy::kNextUse;
  int cache_fetch_ahead = 1;  // shards fetched into the cache ahead of their use
};

}  // namespace spool::loader
