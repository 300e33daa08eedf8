// RecordPool: where the loader keeps the records it has read -- fixed-size,
// reference-counted blocks that are reused instead of one fresh allocation
// per record. Local shards are read straight into its blocks (chunk_reader.h's
// `blocks`), and their records handed out as views of them; records read
// otherwise are copied into blocks once, by a BlockWriter.
//
// Why: a record copied into its own std::string costs a heap allocation,
// and for records of tens of KiB new pages (a page fault per 4 KiB) each
// time, because malloc hands such blocks back to the system; with several
// loader processes on one machine those faults contend in the kernel. A
// block of the pool is taken once, filled with many records end to end, and
// goes back to the pool's free list when the last record in it is dropped,
// its pages still mapped: in steady state the loader neither allocates nor
// faults per record.
//
// Ownership and lifetime: a PooledRecord (a view of one record plus a counted
// reference to its block) keeps its block alive however long it is held --
// beyond the loader and the pool object, which only shares its free list
// with its blocks. When the last reference to a block drops, the block goes
// back to the free list (while the pool keeps fewer than max_idle_bytes
// idle) or is freed.
//
// Memory: a reference pins its whole block, so a shuffle buffer whose
// records each come from a different block pins a block per record. Taking
// a block never waits: the pool makes a new one when its free list is empty
// (it grows; it cannot deadlock a shuffle buffer that pins many blocks).
// What bounds it is the loader: it counts the bytes of the blocks referenced
// now (bytes_live: pinned by its queues, shuffle buffer and batches, and by
// batches the caller still holds) against its memory budget, and stops
// reading while they fill it (pipeline.cc, AdmitFetchesLocked), so pinned
// blocks slow reading down rather than grow memory past the budget. Records
// larger than a block get a block of their own (their size rounded up to
// pages), pooled like the others so that equal large records reuse them.
//
// Threading: Take, a writer's calls (one writer per thread) and copying or
// dropping references are thread-safe. Fork: references made before a fork
// and dropped in the child free their block without touching the free list
// (its lock may have been held by a thread the child does not have).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace spool::records {

class RecordPool;
struct RecordBlock;
struct RecordPoolCore;

struct RecordPoolStats {
  uint64_t blocks_made = 0;  // blocks ever allocated (pooled and oversized)
  uint64_t blocks_live = 0;  // referenced now
  uint64_t bytes_live = 0;   // their sizes
  uint64_t blocks_idle = 0;  // on the free list
  uint64_t bytes_idle = 0;
};

// A counted reference to a block: copying one increments the count (no
// allocation), dropping the last returns the block. Thread-safe like a
// std::shared_ptr.
class BlockRef {
 public:
  BlockRef() = default;
  BlockRef(const BlockRef& other) noexcept;
  BlockRef(BlockRef&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  BlockRef& operator=(const BlockRef& other) noexcept;
  BlockRef& operator=(BlockRef&& other) noexcept;
  ~BlockRef() { Reset(); }

  void Reset() noexcept;
  explicit operator bool() const { return block_ != nullptr; }
  bool operator==(const BlockRef& other) const { return block_ == other.block_; }

 private:
  friend class RecordPool;
  friend class BlockWriter;
  explicit BlockRef(RecordBlock* adopted) : block_(adopted) {}
  RecordBlock* block_ = nullptr;
};

// One record: its bytes, valid while `block` is held.
struct PooledRecord {
  BlockRef block;
  std::string_view bytes;

  size_t size() const { return bytes.size(); }
  std::string ToString() const { return std::string(bytes); }
};

class RecordPool {
 public:
  // Blocks of `block_size` bytes; up to `max_idle_bytes` kept idle.
  RecordPool(size_t block_size, uint64_t max_idle_bytes);
  ~RecordPool();
  RecordPool(const RecordPool&) = delete;
  RecordPool& operator=(const RecordPool&) = delete;

  // A block of at least `min_size` bytes (block_size, or min_size rounded up
  // to pages when larger): an idle one when there is one of that size class,
  // else a new one. Contents unspecified.
  BlockRef Take(size_t min_size);
  // The writable bytes and size of a block this pool made.
  static char* data(const BlockRef& block);
  static size_t capacity(const BlockRef& block);

  size_t block_size() const { return block_size_; }
  RecordPoolStats stats() const;
  uint64_t bytes_live() const;  // stats().bytes_live, lock-free

 private:
  const size_t block_size_;
  std::shared_ptr<RecordPoolCore> core_;  // shared with every block it made
};

// Copies records into blocks of a pool end to end: one per producer (a
// loader fetch task). Not thread-safe; the records it returns are.
class BlockWriter {
 public:
  explicit BlockWriter(RecordPool* pool) : pool_(pool) {}

  // `bytes` copied into the current block (a new one when it does not fit).
  PooledRecord Copy(std::string_view bytes);
  // Room for `n` bytes at the end of the current block (a new one when they
  // do not fit), for a caller that fills them itself; Commit(m <= n) then
  // makes their first m bytes a record. Until then the room is only lent:
  // the next Reserve or Copy reuses it.
  std::span<char> Reserve(size_t n);
  PooledRecord Commit(size_t n);
  // Gives up the current block (its records stay valid).
  void Release() { current_.Reset(); }

 private:
  RecordPool* pool_;
  BlockRef current_;
  size_t used_ = 0;
};

}  // namespace spool::records
