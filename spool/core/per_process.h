// Internal to spool::core: one default object per process, for the
// defaults that must not cross fork() (the executor, the byte budget, the
// buffer pool; see executor.h). A child's first call makes its own; the
// parent's copy is left untouched there (leaked, never used).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "spool/core/executor.h"

namespace spool::internal {

// One process's default object, swapped whole so a reader never pairs one
// process's object with another's generation.
template <typename T>
struct PerProcess {
  T* object = nullptr;
  uint64_t generation = 0;
};

// The object in `slot` for this process (ForkGeneration()), made with
// `make()` (which returns a new T*) on the first call in each process.
// Lock-free once made; never destroyed: threads still running at exit must
// find it.
template <typename T, typename Make>
T& CurrentOf(std::atomic<PerProcess<T>*>& slot, std::mutex& mu, Make make) {
  const uint64_t generation = ForkGeneration();
  PerProcess<T>* current = slot.load(std::memory_order_acquire);
  if (current != nullptr && current->generation == generation) return *current->object;
  std::lock_guard<std::mutex> lock(mu);
  current = slot.load(std::memory_order_acquire);
  if (current == nullptr || current->generation != generation) {
    current = new PerProcess<T>{make(), generation};
    slot.store(current, std::memory_order_release);
  }
  return *current->object;
}

}  // namespace spool::internal
