// BufferPool: large byte buffers kept for reuse after their owner is done,
// so that code which needs a fresh multi-megabyte buffer per chunk, part or
// shard does not take new memory from the system each time.
//
// Why: memory new to a process costs a page fault per 4 KiB on first touch,
// and on virtual machines a fault is expensive (docs/performance.md: reading
// page-cached shards into fresh 4 MiB buffers ran at a twentieth of reading
// them into a reused one, most of the difference in the fault path). malloc
// hands blocks this large back to the system when they are freed (mmap
// threshold, heap trimming), so a buffer freed and allocated again faults
// again. A pool keeps the pages mapped, and makes its buffers from huge
// pages (core/large_buffer.h), so that even a new one faults rarely.
//
// Sizes: a pool holds buffers of any size and gives back one of exactly the
// size asked for, else a new one; callers use a few fixed sizes (the read
// chunk size), so hits are the rule.
//
// Memory: at most `max_idle_bytes` are kept idle; a buffer returned beyond
// that is freed. Buffers in use are their owners' to account for (a
// ByteBudget lease, as today). The default pool keeps 32 MiB.
//
// Threading: Take() and returning buffers are thread-safe. Fork: the default
// pool belongs to the process that made it; a child gets its own, and a
// buffer made in the parent and released in the child is simply freed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "spool/core/large_buffer.h"

namespace spool {

class BufferPool {
 public:
  explicit BufferPool(uint64_t max_idle_bytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer, owned by the caller; given back to its pool when destroyed.
  // Movable; contents are unspecified (not zeroed) when taken.
  class Buffer {
   public:
    Buffer() = default;
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    ~Buffer();

    char* data() const { return data_.get(); }
    size_t size() const { return size_; }
    explicit operator bool() const { return data_ != nullptr; }

   private:
    friend class BufferPool;
    Buffer(BufferPool* pool, LargeBuffer data, size_t size);
    void GiveBack();

    BufferPool* pool_ = nullptr;
    LargeBuffer data_;
    size_t size_ = 0;
  };

  // A buffer of `size` bytes: an idle one of that size if the pool has one
  // (the most recently returned, whose pages are likeliest still in cache),
  // else a new one.
  Buffer Take(size_t size);

  uint64_t idle_bytes() const;
  // Buffers this pool took from the system (not reused), since it was made.
  uint64_t buffers_made() const { return buffers_made_.load(std::memory_order_relaxed); }

 private:
  void Return(LargeBuffer data, size_t size);

  const uint64_t max_idle_bytes_;
  const uint64_t generation_;  // ForkGeneration() when made
  mutable std::mutex mu_;
  struct Idle {
    LargeBuffer data;
    size_t size;
  };
  std::vector<Idle> idle_;  // most recently returned last
  uint64_t idle_bytes_ = 0;
  std::atomic<uint64_t> buffers_made_{0};
};

// The pool used when a caller passes none: 32 MiB idle, one per process.
BufferPool& DefaultBufferPool();

}  // namespace spool
