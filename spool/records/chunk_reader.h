// Sequential reading of one object in large chunks with read-ahead: the I/O
// layer under RecordReader, usable on its own by anything that streams an
// object front to back.
//
// Chunks of `chunk_size` bytes are fetched with ReadableObject::ReadAt on the
// executor, up to `read_ahead` bytes beyond the chunk being consumed, so a
// reader makes one request per chunk, never one per record. A reader starts
// small: its first request is `first_chunk` bytes (a range of one chunk or
// less stays one request), and its read-ahead grows from one request,
// doubling with each chunk handed out (as a TCP window in slow start), so
// that readers opened together get their first records before any of them
// has its whole read-ahead. Buffers are reused from chunk to chunk, and come
// from (and go back to) a BufferPool, so the next reader of the same chunk
// size reuses them too.
//
// Local objects read into a RecordPool's blocks (`blocks` below) are the
// exception: they have no read-ahead, and each block is read on the
// consumer's thread when it is needed, so that its records are parsed and
// checked while the bytes are still in that core's cache. Copied ahead by
// executor threads, they were not: 16 loader processes on 16 cores then spent
// 1.3-1.5x the CPU per byte, and read 17-21 GB/s together instead of 26-27
// (bench/results/2026-11-28T0300Z-16-cores-profile.md). What overlaps reading
// there is the kernel's own read-ahead and the loader's other shards; an
// explicit posix_fadvise(WILLNEED) ahead of the reads measured no faster on
// a cold disk and cost 5% on cached files.
//
// Memory: every read-ahead chunk takes its bytes from the ByteBudget with
// TryAcquire and is not issued while the budget is full; the chunk needed
// right now is always fetched (with the budget's bytes if it has them), so a
// reader never waits on buffers another reader holds. Peak memory is thus the
// budget plus at most one chunk per open reader.
//
// Threading: one consumer thread at a time. A chunk still queued when the
// consumer needs it is fetched on the consumer's thread instead, so waiting
// never depends on a free executor thread (no deadlock when the consumer is
// itself an executor task). The destructor cancels the reader's requests in
// flight (core/cancel.h) and queued fetches, and waits for running ones.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spool/core/buffer_pool.h"
#include "spool/core/cancel.h"
#include "spool/core/executor.h"
#include "spool/core/status.h"
#include "spool/core/stealable_task.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/record_pool.h"

namespace spool::records {

struct ReadAheadOptions {
  uint64_t chunk_size = 4 << 20;   // bytes per ReadAt
  uint64_t read_ahead = 16 << 20;  // bytes fetched ahead; 0 = fetch on the caller's thread only
  // Bytes of the first request (at most chunk_size): what the first records
  // wait for. The read-ahead then grows from one request, doubling with each
  // chunk handed out.
  uint64_t first_chunk = 256 << 10;
  Executor* executor = nullptr;    // default: DefaultExecutor()
  ByteBudget* budget = nullptr;    // default: DefaultByteBudget()
  BufferPool* buffers = nullptr;   // default: DefaultBufferPool()
  // CRC32C of the whole object (a dataset manifest's). When the reader
  // covers the object from byte 0 to its end, the bytes are checked as they
  // arrive: the chunk that completes the object is returned only if the
  // whole matches, else Next() fails with DataLoss naming the URL. Chunks
  // handed out before were not checked as a whole yet (their records carry
  // their own CRCs). A reader of part of the object checks nothing.
  std::optional<uint32_t> expected_crc32c;
  // When set, and the object's reads are local (ReadableObject::
  // reads_are_local: no request per read), chunks are read into blocks of
  // this pool, a block's size each instead of chunk_size, one at a time when
  // needed (no read-ahead: see the top of this file), and block() lets
  // the consumer keep a chunk's bytes past the next Next(): a loader hands
  // out records as views of the chunk they were read into, not copies
  // (record_pool.h). A block is never reused while anyone holds it. Remote
  // objects keep chunk_size and `buffers`: a smaller chunk there would cost
  // a request more per block. The pool must outlive the reader.
  RecordPool* blocks = nullptr;
};

class ChunkReader {
 public:
  // Reads [start, end) of `object`; `url` names it in error messages.
  ChunkReader(std::shared_ptr<ReadableObject> object, std::string url, uint64_t start, uint64_t end,
              const ReadAheadOptions& options);
  ~ChunkReader();
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;

  // The next chunk; empty at the end. The bytes stay valid until the next
  // call. Errors name the URL and the offset of the failed read.
  Result<std::span<const char>> Next();

  // The block the last chunk was read into (options.blocks), else an empty
  // reference: hold it to keep that chunk's bytes past the next Next().
  const BlockRef& block() const;

  // Object offset of the first byte the next Next() returns.
  uint64_t position() const { return position_; }
  // Bytes received from the store so far.
  uint64_t bytes_fetched() const { return bytes_fetched_; }

 private:
  struct Fetch;
  void Issue(bool needed_now);
  void TopUp();
  void Recycle(std::shared_ptr<Fetch> fetch);
  static Status Run(Fetch& fetch, ReadableObject& object);

  std::shared_ptr<ReadableObject> object_;
  std::string url_;
  CancelSource cancel_;  // the read-ahead's requests; cancelled by the destructor
  uint64_t start_;       // first byte of the range
  uint64_t position_;     // next byte handed out
  uint64_t issue_offset_;  // next byte to request
  uint64_t end_;
  ReadAheadOptions options_;
  size_t max_in_flight_;
  size_t ramp_ = 1;       // requests that may be in flight now (TopUp)
  bool into_blocks_ = false;  // chunks are read into options_.blocks, on the consumer's thread
  bool verify_ = false;   // expected_crc32c applies: reading the whole object
  uint32_t crc_ = 0;      // of the bytes handed out so far, when verify_
  std::deque<std::shared_ptr<Fetch>> in_flight_;
  std::shared_ptr<Fetch> current_;
  std::vector<BufferPool::Buffer> spare_buffers_;
  uint64_t bytes_fetched_ = 0;
};

}  // namespace spool::records
