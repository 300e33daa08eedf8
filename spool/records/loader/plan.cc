#include "spool/records/loader/plan.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "spool/records/loader/prng.h"

namespace spool::loader {

uint64_t RecordCut(uint64_t total, uint64_t worker, uint64_t workers) {
  // Computed without overflow for any realistic total.
  return static_cast<uint64_t>(static_cast<unsigned __int128>(total) * worker / workers);
}

std::vector<uint32_t> EpochShardOrder(size_t shards, uint64_t seed, uint64_t epoch, bool shuffle) {
  std::vector<uint32_t> order(shards);
  std::iota(order.begin(), order.end(), 0u);
  if (!shuffle) return order;
  Prng rng(DeriveSeed({seed, epoch, 0x5a4dull}));
  for (size_t i = shards; i > 1; --i) {  // Fisher-Yates
    std::swap(order[i - 1], order[rng.Below(i)]);
  }
  return order;
}

Result<std::vector<Segment>> PlanWorkerEpoch(const std::vector<std::optional<uint64_t>>& counts, uint64_t seed,
                                             uint64_t epoch, bool shuffle_shards, uint64_t worker,
                                             uint64_t workers) {
  if (workers == 0 || worker >= workers) {
    return InvalidArgumentError("worker " + std::to_string(worker) + " is outside " + std::to_string(workers) +
                                " workers");
  }
  const std::vector<uint32_t> order = EpochShardOrder(counts.size(), seed, epoch, shuffle_shards);
  std::vector<Segment> plan;
  const bool all_known = std::all_of(counts.begin(), counts.end(), [](const auto& c) { return c.has_value(); });
  if (!all_known) {
    if (counts.size() < workers) {
      return InvalidArgumentError(std::to_string(counts.size()) + " shards cannot be split over " +
                                  std::to_string(workers) + " workers without record counts");
    }
    for (size_t i = worker; i < order.size(); i += workers) plan.push_back(Segment{order[i], 0, std::nullopt});
    return plan;
  }
  uint64_t total = 0;
  for (const auto& c : counts) total += *c;
  // Worker w gets the records [total*w/W, total*(w+1)/W) of the epoch's
  // concatenation.
  const uint64_t want_begin = RecordCut(total, worker, workers);
  const uint64_t want_end = RecordCut(total, worker + 1, workers);
  uint64_t shard_start = 0;  // position of the current shard's first record in the concatenation
  for (uint32_t shard : order) {
    const uint64_t n = *counts[shard];
    const uint64_t lo = std::max(want_begin, shard_start);
    const uint64_t hi = std::min(want_end, shard_start + n);
    if (lo < hi) plan.push_back(Segment{shard, lo - shard_start, hi - shard_start});
    shard_start += n;
    if (shard_start >= want_end) break;
  }
  return plan;
}

}  // namespace spool::loader
