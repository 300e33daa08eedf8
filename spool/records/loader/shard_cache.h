// ShardCache: a node-wide cache of whole shards on local disk, between the
// loader and its store. The loader asks it for a shard and reads the bytes
// from the local file it names; records, batching and order never see it.
//
// One cache per node: every loader, rank and DataLoader worker process on a
// machine that names the same folder shares it.
// - A shard is fetched once: whoever fetches it holds an exclusive flock on
//   ".<name>.lock"; the others block on that lock and then find the file.
//   flock (not O_EXCL alone) because the kernel drops it when a process dies,
//   so a killed fetch never blocks anyone.
// - The fetch writes ".<name>.spoolpart-<size>", checks the size and the CRC32C
//   the manifest (or the store) gives, and renames it to "<name>": a file
//   under its final name is complete. A killed fetch leaves only a ".part"
//   file, removed by the next process that takes that shard's lock (or
//   finds the lock free while scanning). Complete files are checked again
//   (size, CRC32C) the first time a process uses them, so a damaged file
//   from a previous job is dropped and fetched again.
// - The limit is for the node: before a fetch, under an exclusive flock on
//   "<dir>/.lock", the folder is scanned (complete files by size, fetches in
//   flight by the size in their ".part" name), victims are unlinked and the
//   ".spoolpart" file is created, which reserves its room. Scanning instead of a
//   shared ledger: nothing to repair after a crash, and the folder is the
//   truth (a few hundred entries is microseconds).
// - Eviction: CachePolicy::kNextUse unlinks the file whose next use by this
//   node (cache_schedule.h) is furthest, and does not cache the shard asked
//   for when it is itself used later than every victim (it is then read
//   from the store): Belady's rule. kLru unlinks the least recently used
//   (the file's access time, set on every use by any process; not the
//   mtime, by which readers pin a file). A reader holding the
//   file open keeps reading an unlinked file.
// - Fetch ahead: after each use, the next `fetch_ahead` shards of the
//   worker's plan are fetched on a thread of the cache, under the same rule
//   (never evicting a shard needed sooner than the one fetched).
// - Faults: a local error (full disk, quota, unwritable or vanished folder)
//   turns the cache off for this loader with one warning; Acquire then
//   answers "read from the store", so no record is lost or repeated. A store
//   error during a fetch also answers "read from the store", whose reader
//   reports the error as without a cache.
//
// Threading: Acquire from any thread; Close (and the destructor) stops the
// fetch-ahead thread and waits for it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/loader/cache_schedule.h"
#include "spool/records/loader/inputs.h"

namespace spool::loader {

struct ShardCacheOptions {
  std::string dir;
  uint64_t limit = 0;  // bytes for the whole node; 0: the disk is the limit
  CachePolicy policy = CachePolicy::kNextUse;
  int fetch_ahead = 1;  // shards fetched ahead of their use, per loader
};

struct ShardCacheCounts {
  uint64_t hits = 0;           // shards read from the cache
  uint64_t misses = 0;         // shards not in the cache when asked for
  uint64_t fetched_bytes = 0;  // written into the cache by this loader
  uint64_t evicted_bytes = 0;  // removed by this loader to make room
  uint64_t fetch_ahead = 0;    // shards queued or being fetched ahead now
  bool off = false;            // a fault turned the cache off
};

// The cache a reader uses: `dir`, else SPOOL_CACHE_DIR (an empty dir: no
// cache); `limit`, else SPOOL_CACHE_LIMIT ("200G"), else 0. One reading of
// the environment for the loader and spool.RecordMapDataset.
Result<ShardCacheOptions> ResolveShardCacheOptions(std::string dir, uint64_t limit);

class ShardCache {
 public:
  // Never fails: a folder that cannot be made is a cache that is off.
  // `schedule` may be null (LRU only).
  ShardCache(ShardCacheOptions options, std::shared_ptr<const std::vector<ShardInfo>> shards,
             std::shared_ptr<const CacheSchedule> schedule);
  ~ShardCache();  // Close()
  ShardCache(const ShardCache&) = delete;
  ShardCache& operator=(const ShardCache&) = delete;

  // The key in store() of `shard`'s complete, checked bytes, fetching them
  // first if needed (waiting while another process fetches them); nullopt:
  // read the shard from its own store. `epoch` and `worker` place the use in
  // the plan.
  std::optional<std::string> Acquire(uint32_t shard, uint64_t epoch, uint64_t worker);
  // The local filesystem store the keys belong to.
  ObjectStore& store() const { return *local_; }
  ShardCacheCounts Counts() const;
  void Close();

 private:
  struct Now {
    uint64_t epoch = 0;
    uint64_t worker = 0;
    std::optional<uint64_t> position;  // in the worker's plan; unknown: cache it as if needed now
  };
  std::optional<std::string> Obtain(uint32_t shard, const Now& now, bool ahead);
  bool Verified(const std::string& name, const std::string& path);
  // Makes room for `size` bytes and creates the ".spoolpart" file (fd returned);
  // -1 with *bypass set when the shard is not to be cached, -1 alone on a
  // fault (already reported).
  int Reserve(uint32_t shard, const std::string& name, uint64_t size, const Now& now, bool* bypass);
  void Fault(const std::string& what);
  void AheadLoop();
  void QueueAhead(const Now& now);

  const ShardCacheOptions options_;
  const std::shared_ptr<const std::vector<ShardInfo>> shards_;
  const std::shared_ptr<const CacheSchedule> schedule_;
  std::shared_ptr<ObjectStore> local_;
  std::vector<std::string> names_;           // per shard: its file name in the cache
  std::map<std::string, uint32_t> by_name_;  // file name -> shard

  std::atomic<bool> off_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> hits_{0}, misses_{0}, fetched_bytes_{0}, evicted_bytes_{0};

  mutable std::mutex mu_;
  std::map<std::string, std::pair<uint64_t, int64_t>> verified_;  // name -> (inode, mtime ns) checked
  std::deque<std::pair<uint32_t, Now>> ahead_;                    // shard, the use that asked for it
  int ahead_running_ = 0;
  std::condition_variable ahead_cv_;
  std::thread ahead_thread_;
};

// What `spool cache ls` shows: the complete shards in a cache folder.
struct CachedFile {
  std::string name;
  uint64_t size = 0;
  int64_t used_ns = 0;  // last use (access time)
};
Result<std::vector<CachedFile>> ListShardCache(const std::string& dir);
// Removes every complete shard and every abandoned ".spoolpart" file, under the
// folder's lock; fetches in flight finish. Returns the bytes removed.
Result<uint64_t> ClearShardCache(const std::string& dir);

}  // namespace spool::loader
