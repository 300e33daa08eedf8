#include "spool/records/loader/record_order.h"

#include <string>

namespace spool::loader {

Result<ReplayPoint> ReplayOrder(size_t segments, int cycle, int block, uint64_t shuffle_capacity,
                                uint64_t shuffle_seed, uint64_t delivered,
                                const std::function<Result<uint64_t>(size_t segment)>& length) {
  ReplayPoint point;
  point.schedule = InterleaveSchedule(segments, cycle, block);
  ShuffleBuffer<RecordRef> shuffle(shuffle_capacity, shuffle_seed);
  std::vector<uint64_t> lengths;
  Status error;
  auto pull = [&](size_t segment, ShuffleBuffer<RecordRef>& buffer) {
    while (lengths.size() <= segment) {
      Result<uint64_t> n = length(lengths.size());
      if (!n.ok()) {
        error = n.status();
        return Pull::kWait;
      }
      lengths.push_back(*n);
      point.taken.push_back(0);
    }
    if (point.taken[segment] == lengths[segment]) return Pull::kEnded;
    buffer.Push(RecordRef{static_cast<uint32_t>(segment), point.taken[segment]++});
    return Pull::kTaken;
  };
  for (uint64_t i = 0; i < delivered; ++i) {
    RecordRef ignored;
    Step step = NextInOrder(point.schedule, shuffle, point.input_ended, pull, &ignored);
    if (!error.ok()) return error;
    if (step != Step::kRecord) {
      return OutOfRangeError("the epoch has only " + std::to_string(i) + " records, the state says " +
                             std::to_string(delivered) + " were delivered");
    }
  }
  point.taken.resize(point.schedule.opened(), 0);
  point.buffered = std::move(shuffle.items());
  point.shuffle_rng_state = shuffle.rng_state();
  return point;
}

}  // namespace spool::loader
