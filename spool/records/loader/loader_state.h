// LoaderState: where a DataLoader is in its stream, small enough for a
// checkpoint's metadata. A value; thread-safe to copy.
//
// (seed, epoch, position) say where the worker is: `position` records of
// epoch `epoch` have been delivered. The worker identity is kept to refuse a
// state from another worker or job shape. `truncated` lists the shards that
// BadShardPolicy::kSkip cut short in this epoch (shard, records readable), so
// that a resumed loader makes the same cuts without reading the damage again;
// it is empty unless data was bad. `fingerprint` names the inputs the state
// was taken on (fingerprint.h), so that a state of another dataset is refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"

namespace spool::loader {

struct LoaderState {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t position = 0;  // records delivered in `epoch`
  uint64_t worker = 0;    // rank * local_workers + local_worker
  uint64_t workers = 1;   // world_size * local_workers
  // Elastic mode (DataLoaderOptions::partitions): the partition count, and
  // `position` counts the records each partition has delivered (steps times
  // the per-partition batch); worker and workers say who saved it but do not
  // bind the resume. 0: a fixed job shape, as above.
  uint64_t partitions = 0;
  // The inputs' fingerprint: 16 hex digits. Empty in a state written before
  // states carried one; such a state is resumed unchecked.
  std::string fingerprint;
  struct Truncation {
    uint32_t shard = 0;
    uint64_t records = 0;  // records readable before the damage
    friend bool operator==(const Truncation&, const Truncation&) = default;
  };
  std::vector<Truncation> truncated;

  // One line of text: "spool-loader/1 seed=7 epoch=2 position=1536 worker=3 workers=8
  // fingerprint=4f0c2a9e81d3b657 truncated=4:100,9:0" (with " partitions=C" before
  // fingerprint= in elastic mode; fields that are unset are left out).
  std::string Encode() const;
  // InvalidArgument naming the text when it is not an Encode() output.
  static Result<LoaderState> Decode(std::string_view text);

  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

}  // namespace spool::loader
