// The deterministic interleave order: `cycle` segments open at once, taking
// `block` records from each in turn (as tf.data's interleave with
// cycle_length and block_length). When a segment runs out, the next segment
// of the plan takes its place in the cycle and the turn passes on.
//
// This is only bookkeeping: it decides which segment the next record must
// come from, never waits for data. The loader's assembler and the resume
// replay drive the same class, which is what makes resume exact.
// Not thread-safe; a value (copyable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace spool::loader {

class InterleaveSchedule {
 public:
  InterleaveSchedule(size_t segments, int cycle, int block);

  // The segment the next record comes from; nullopt once every segment ended.
  std::optional<size_t> Current();
  // `count` records were taken from Current() (count <= BlockRemaining()).
  void Took(uint64_t count = 1);
  // Current() has no more records: the next segment of the plan replaces it.
  void Ended();
  // Records Current() may still give before the turn passes on.
  uint64_t BlockRemaining() const { return static_cast<uint64_t>(block_) - taken_; }

  // Segments [0, opened()) have been given a place in the cycle.
  size_t opened() const { return next_segment_; }
  // The segments in the cycle now, in cycle order starting with Current().
  std::vector<size_t> Active() const;
  // The same into `out` (cleared first; its capacity is reused).
  void ActiveInto(std::vector<size_t>* out) const;

 private:
  void Advance();

  size_t segments_;
  int cycle_;
  int block_;
  std::vector<long long> slots_;  // segment index, or -1 for an empty place
  size_t next_segment_ = 0;
  size_t active_ = 0;
  size_t cursor_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace spool::loader
