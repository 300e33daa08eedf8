#include "spool/records/loader/interleave.h"

#include <algorithm>

namespace spool::loader {

InterleaveSchedule::InterleaveSchedule(size_t segments, int cycle, int block)
    : segments_(segments), cycle_(std::max(cycle, 1)), block_(std::max(block, 1)),
      slots_(static_cast<size_t>(cycle_), -1) {
  for (auto& slot : slots_) {
    if (next_segment_ < segments_) {
      slot = static_cast<long long>(next_segment_++);
      ++active_;
    }
  }
}

std::optional<size_t> InterleaveSchedule::Current() {
  if (active_ == 0) return std::nullopt;
  while (slots_[cursor_] < 0) Advance();
  return static_cast<size_t>(slots_[cursor_]);
}

void InterleaveSchedule::Took(uint64_t count) {
  taken_ += count;
  if (taken_ >= static_cast<uint64_t>(block_)) Advance();
}

void InterleaveSchedule::Ended() {
  if (next_segment_ < segments_) {
    slots_[cursor_] = static_cast<long long>(next_segment_++);
  } else {
    slots_[cursor_] = -1;
    --active_;
  }
  Advance();
}

std::vector<size_t> InterleaveSchedule::Active() const {
  std::vector<size_t> active;
  ActiveInto(&active);
  return active;
}

void InterleaveSchedule::ActiveInto(std::vector<size_t>* out) const {
  out->clear();
  for (size_t i = 0; i < slots_.size(); ++i) {
    long long slot = slots_[(cursor_ + i) % slots_.size()];
    if (slot >= 0) out->push_back(static_cast<size_t>(slot));
  }
}

void InterleaveSchedule::Advance() {
  cursor_ = (cursor_ + 1) % slots_.size();
  taken_ = 0;
}

}  // namespace spool::loader
