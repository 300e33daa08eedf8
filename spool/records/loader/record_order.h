// The order in which one worker's records leave the loader within an epoch:
// interleave (which segment gives the next record) then shuffle buffer.
//
// NextInOrder is the single step both the live assembler and the resume
// replay run, the first on records, the second on record references, so a
// replay reaches exactly the state a live run had after the same number of
// deliveries. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "spool/core/status.h"
#include "spool/records/loader/interleave.h"
#include "spool/records/loader/shuffle_buffer.h"

namespace spool::loader {

enum class Pull { kTaken, kEnded, kWait };

enum class Step { kRecord, kWait, kEnd };

// Fills `shuffle` from the interleave, then pops one item into *out.
// `pull(segment, shuffle)` pushes the segment's next item into the shuffle
// buffer (kTaken), reports that the segment has no more (kEnded), or that its
// data is not here yet (kWait: nothing changes, call again later).
template <typename T, typename PullFn>
Step NextInOrder(InterleaveSchedule& schedule, ShuffleBuffer<T>& shuffle, bool& input_ended, PullFn&& pull,
                 T* out) {
  while (shuffle.WantsInput() && !input_ended) {
    std::optional<size_t> segment = schedule.Current();
    if (!segment) {
      input_ended = true;
      break;
    }
    switch (pull(*segment, shuffle)) {
      case Pull::kTaken: schedule.Took(); break;
      case Pull::kEnded: schedule.Ended(); break;
      case Pull::kWait: return Step::kWait;
    }
  }
  if (!shuffle.CanPop(input_ended)) return Step::kEnd;
  *out = shuffle.Pop();
  return Step::kRecord;
}

// A record by its place in the plan: the index-th record of a segment
// (counted from the segment's first record).
struct RecordRef {
  uint32_t segment = 0;
  uint64_t index = 0;
};

// The state of the order after `delivered` records of an epoch.
struct ReplayPoint {
  InterleaveSchedule schedule{0, 1, 1};
  bool input_ended = false;
  std::vector<uint64_t> taken;      // per segment in [0, schedule.opened()): records pulled
  std::vector<RecordRef> buffered;  // the shuffle buffer, in buffer order
  uint64_t shuffle_rng_state = 0;
};

// Replays the order on references. `length(segment)` gives a segment's record
// count (called once per segment reached, in plan order). OutOfRange when the
// epoch has fewer than `delivered` records.
Result<ReplayPoint> ReplayOrder(size_t segments, int cycle, int block, uint64_t shuffle_capacity,
                                uint64_t shuffle_seed, uint64_t delivered,
                                const std::function<Result<uint64_t>(size_t segment)>& length);

}  // namespace spool::loader
