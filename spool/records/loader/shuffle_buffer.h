// A seeded shuffle buffer of `capacity` items: it fills to capacity, then
// each output is a uniformly drawn item (the gap is filled by the last item)
// and the next input refills it; at the end of the input it drains in random
// order. Capacity 0 or 1 passes items through in order.
//
// The loader runs it on records, and the resume replay runs the same code on
// record references, so both make identical choices. Not thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "spool/records/loader/prng.h"

namespace spool::loader {

template <typename T>
class ShuffleBuffer {
 public:
  ShuffleBuffer(uint64_t capacity, uint64_t seed) : capacity_(capacity < 1 ? 1 : capacity), rng_(seed) {}

  // Whether an input is wanted before the next output (always, until full).
  bool WantsInput() const { return items_.size() < capacity_; }
  void Push(T item) { items_.push_back(std::move(item)); }
  // Whether Pop may be called: full, or the input has ended and items remain.
  bool CanPop(bool input_ended) const { return !items_.empty() && (!WantsInput() || input_ended); }
  T Pop() {
    size_t pick = capacity_ == 1 ? 0 : static_cast<size_t>(rng_.Below(items_.size()));
    T item = std::move(items_[pick]);
    if (pick + 1 != items_.size()) items_[pick] = std::move(items_.back());
    items_.pop_back();
    return item;
  }

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  std::vector<T>& items() { return items_; }  // in buffer order
  const std::vector<T>& items() const { return items_; }
  uint64_t rng_state() const { return rng_.state(); }
  void set_rng_state(uint64_t state) { rng_ = Prng(state); }

 private:
  uint64_t capacity_;
  Prng rng_;
  std::vector<T> items_;
};

}  // namespace spool::loader
