// When the workers of this node next use each shard: the oracle behind the
// shard cache's next-use (Belady) eviction, and the list of shards to fetch
// ahead.
//
// The order comes from the loader's own plan (PlanWorkerEpoch in plan.h), run
// for every worker of this node: nothing here re-derives a shuffle. A
// worker's "uses" in an epoch are the shards of its plan, in plan order (a
// shard appears at most once in one worker's epoch). Time is counted in plan
// steps: step p of an epoch is the p-th segment of each worker's plan, and
// the node's workers are assumed to go at the same pace (they read equal
// record shares), so the requesting worker's position stands for everyone's.
// The horizon is the rest of this epoch and the whole next one (unless the
// loader stops before it); a shard not used within it is "never".
//
// "This node" is a list of worker indices given by the loader
// (DataLoader::Open: the local ranks named by LOCAL_RANK/LOCAL_WORLD_SIZE,
// each with its local_workers; in elastic mode, the partitions those
// workers own). Thread-safe: plans are computed once per (epoch, worker)
// and kept for two epochs.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace spool::loader {

class CacheSchedule {
 public:
  struct Config {
    std::vector<std::optional<uint64_t>> counts;  // per shard, as the plan takes them
    uint64_t seed = 0;
    bool shuffle_shards = true;
    uint64_t epochs = 0;                 // 0: forever
    uint64_t workers = 1;                // plan identities in the job (workers, or partitions in elastic mode)
    std::vector<uint64_t> node_workers;  // those read on this node
  };
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  explicit CacheSchedule(Config config);

  // Steps from now (worker `worker` at plan position `position` of `epoch`)
  // to the next use of `shard` at a position >= from_position by any of the
  // node's workers; kNever when not within the horizon.
  uint64_t NextUse(uint32_t shard, uint64_t epoch, uint64_t worker, uint64_t position, uint64_t from_position) const;
  // Where `shard` is in `worker`'s plan of `epoch`; nullopt when it is not.
  std::optional<uint64_t> Position(uint64_t worker, uint64_t epoch, uint32_t shard) const;
  // Up to `count` shards `worker` reads after `position` of `epoch`, with
  // their (epoch, position), crossing into the next epoch.
  struct Use {
    uint32_t shard = 0;
    uint64_t epoch = 0;
    uint64_t position = 0;
  };
  std::vector<Use> Upcoming(uint64_t worker, uint64_t epoch, uint64_t position, size_t count) const;

 private:
  // The shards of `worker`'s plan in `epoch`; empty past the last epoch.
  std::shared_ptr<const std::vector<uint32_t>> Plan(uint64_t worker, uint64_t epoch) const;

  const Config config_;
  mutable std::mutex mu_;
  mutable std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<const std::vector<uint32_t>>>
      plans_;  // (epoch, worker)
};

}  // namespace spool::loader
