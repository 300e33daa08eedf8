// Which records of which shards one worker reads in one epoch.
//
// Every epoch the shards are put in an order drawn from (seed, epoch) -- the
// same on every worker -- and cut among the workers:
// - when every shard's record count is known (manifest, index files, or a
//   count made at open), the concatenation of the shards in epoch order is
//   cut into `workers` contiguous record ranges whose sizes differ by at most
//   one record: no worker idles, whatever the shard sizes, at the price of at
//   most workers-1 shards being split (the second part starts by skipping to
//   its first record);
// - otherwise the shards are dealt round robin, whole (needs shards >=
//   workers; the loader counts records at open when that does not hold).
// Either way each record of the epoch goes to exactly one worker.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "spool/core/status.h"

namespace spool::loader {

// Records [begin, end) of one shard; end unset: to the end of the shard.
struct Segment {
  uint32_t shard = 0;
  uint64_t begin = 0;
  std::optional<uint64_t> end;

  friend bool operator==(const Segment&, const Segment&) = default;
};

// Where worker `worker` of `workers` starts in an epoch of `total` records
// when counts are known: its share is [RecordCut(w), RecordCut(w + 1)), the
// same in every epoch (only which shards fill it changes).
uint64_t RecordCut(uint64_t total, uint64_t worker, uint64_t workers);

// The epoch's shard order (a permutation of [0, shards)).
std::vector<uint32_t> EpochShardOrder(size_t shards, uint64_t seed, uint64_t epoch, bool shuffle);

// The segments `worker` reads in `epoch`, in reading order. `counts[i]` is the
// record count of shard i when known. InvalidArgument when counts are
// missing and there are fewer shards than workers.
Result<std::vector<Segment>> PlanWorkerEpoch(const std::vector<std::optional<uint64_t>>& counts, uint64_t seed,
                                             uint64_t epoch, bool shuffle_shards, uint64_t worker,
                                             uint64_t workers);

}  // namespace spool::loader
