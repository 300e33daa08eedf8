// RecordReader: reads the records of one TFRecord file on any ObjectStore,
// with TensorFlow's outcomes:
//
//   - a clean end of data, or 1 to 11 trailing bytes (a partial header),
//     ends the file cleanly (TensorFlow: OutOfRange);
//   - a full header whose record is cut short is DataLoss
//     "truncated record at N" (N = the record's offset);
//   - a bad length CRC is DataLoss "corrupted record at N", and a bad
//     payload CRC is "corrupted record at N+12" (TensorFlow names the
//     payload's offset there).
//
// Offsets count bytes of the uncompressed record stream, as TensorFlow's
// do. Every error names the object URL. With CorruptPolicy::kSkipRestOfShard
// a DataLoss (bad CRC, truncation, undecodable GZIP/ZLIB data) ends the file
// early instead, and stats() records it: once a CRC fails the framing can no
// longer be trusted, so nothing after it is read. I/O errors always fail.
//
// I/O: the object is read in large chunks with read-ahead (ChunkReader); the
// records are cut from those chunks, without a copy when a record lies within
// one chunk. The CRC32C of the whole object (io.expected_crc32c, a dataset
// manifest's) is checked as the ChunkReader describes, except for an
// uncompressed object read from byte 0, where the reader derives it from the
// records' own CRCs (crc32c::Combine) and checks it on the last record:
// Next() fails with the same DataLoss instead of returning that record
// (where the ChunkReader's check withholds the last chunk's records).
// Compression is chosen explicitly or from the extension (.gz, .zlib),
// never from the content.
//
// Positions: record_offset() and next_offset() give the byte offsets a
// loader stores to resume; SeekToOffset() and SeekToRecord() (with the
// shard's index file, or by skipping records) start anywhere.
//
// Threading: one thread at a time per reader; many readers may run at once.
// The store (for Open by key) must outlive the reader.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/chunk_reader.h"
#include "spool/records/compressed_stream.h"
#include "spool/records/compression.h"
#include "spool/records/record_index.h"

namespace spool::records {

enum class CorruptPolicy {
  kFail,             // return the DataLoss error (default)
  kSkipRestOfShard,  // end this file at the damage and count it
};

struct RecordReaderOptions {
  std::optional<Compression> compression;  // default: from the key's extension
  ReadAheadOptions io;                     // chunk size, read-ahead, executor, byte budget
  CorruptPolicy on_corrupt = CorruptPolicy::kFail;
  // Stop before the first record that starts at or after this offset (a
  // record range [start, end) for a loader that splits shards).
  uint64_t end_offset = UINT64_MAX;
  Inflater::Engine inflate_engine = Inflater::Engine::kAuto;
  size_t inflate_block_size = 1 << 20;  // decompressed bytes produced per step
};

struct RecordReaderStats {
  uint64_t records = 0;        // records returned
  uint64_t payload_bytes = 0;  // their payload bytes
  uint64_t object_bytes = 0;   // bytes fetched from the store (compressed, if so)
  // Set when kSkipRestOfShard ended the file early: what went wrong.
  bool skipped_rest = false;
  Status skip_reason;
};

class RecordReader {
 public:
  // Opens `key` in `store` (pinning the version seen now).
  static Result<std::unique_ptr<RecordReader>> Open(ObjectStore& store, std::string_view key,
                                                    const RecordReaderOptions& options = {});
  // Reads an object someone already opened; `url` names it in errors and
  // picks the compression from its extension when the options leave it open.
  static Result<std::unique_ptr<RecordReader>> Open(std::shared_ptr<ReadableObject> object, std::string url,
                                                    const RecordReaderOptions& options = {});
  // Reads `object`, which the caller opened from `key` in `store` (from a
  // listing, say): as Open(store, key), with seeks using the index beside it.
  static Result<std::unique_ptr<RecordReader>> Open(std::shared_ptr<ReadableObject> object, ObjectStore& store,
                                                    std::string key, const RecordReaderOptions& options = {});
  ~RecordReader();

  // The next record: true and `*record` set, or false at the end. A view
  // stays valid until the next call on this reader.
  Result<bool> Next(std::string_view* record);
  // The same, and `*block` set to a pooled block the view lies in, else
  // reset; holding it keeps the view valid past the next call:
  //   - a record within one chunk read into a block of options.io.blocks
  //     (an uncompressed object whose reads are local) is a view of it;
  //   - a record of an uncompressed object that spans chunks is gathered
  //     straight into `spill`'s block, when given (not via a scratch copy).
  // Any other record comes without a block, as from Next(record).
  Result<bool> Next(std::string_view* record, BlockRef* block, BlockWriter* spill = nullptr);
  // The same, copying into `*record` (its capacity is reused).
  Result<bool> Next(std::string* record);

  // Continues at the record starting at `offset` (an offset some reader
  // reported; anything else fails with "corrupted record at offset").
  // Uncompressed files jump there; compressed ones decompress up to it.
  Status SeekToOffset(uint64_t offset);
  // Continues at record `index` (0-based). Uses the index given to
  // SetIndex, else the shard's "<key>.idx" if it exists (uncompressed files
  // opened by key), else reads and drops the records before it.
  // OutOfRange past the last record (== count is the end, and fine).
  Status SeekToRecord(uint64_t index);
  void SetIndex(RecordIndex index);

  // Offset of the record the last Next() returned.
  uint64_t record_offset() const { return record_offset_; }
  // Offset where the next record starts: the resume point.
  uint64_t next_offset() const { return stream_pos_; }
  // Index of the next record, when known (always, unless SeekToOffset went
  // to an offset without an index).
  std::optional<uint64_t> next_record_index() const { return next_index_; }

  const std::string& url() const { return url_; }
  Compression compression() const { return compression_; }
  // Whether records may come as views of options.io.blocks (Next with a
  // block): an uncompressed object whose reads are local.
  bool reads_into_blocks() const {
    return options_.io.blocks != nullptr && compression_ == Compression::kNone && object_->reads_are_local();
  }
  // Size of the stored object.
  uint64_t object_size() const { return object_->info().size; }
  RecordReaderStats stats() const;

 private:
  class BlockSource;
  class RawBlocks;
  class InflatedBlocks;

  RecordReader(std::shared_ptr<ReadableObject> object, std::string url, ObjectStore* store, std::string key,
               Compression compression, const RecordReaderOptions& options);
  Status Restart(uint64_t offset);
  Status EnsureSource();
  Result<bool> ReadRecord(std::string_view* record);
  Result<size_t> Gather(char* dest, size_t n);
  Status GatherInto(std::string& dest, uint64_t n, bool* complete);
  Status Discard(uint64_t n);
  Result<bool> Fail(Status status);
  Status WholeCrcMismatch() const;  // the manifest's CRC32C of the whole object did not match
  Status LoadIndexIfPresent();

  std::shared_ptr<ReadableObject> object_;
  std::string url_;
  ObjectStore* store_;  // null when opened from an object
  std::string key_;
  Compression compression_;
  RecordReaderOptions options_;

  std::unique_ptr<BlockSource> source_;  // created at the first read
  std::span<const char> block_;          // unread bytes of the current block
  uint64_t stream_pos_ = 0;              // stream offset of block_.data()
  uint64_t source_start_ = 0;            // where source_ (will) start
  uint64_t record_offset_ = 0;
  uint64_t record_start_ = 0;  // offset of the record being read
  std::optional<uint64_t> next_index_ = 0;
  std::optional<RecordIndex> index_;
  bool index_looked_up_ = false;
  bool finished_ = false;
  // Where the last record's bytes lie: set by ReadRecord, read by Next.
  enum class RecordBytesIn { kChunk, kSpill, kScratch };
  RecordBytesIn record_in_ = RecordBytesIn::kChunk;
  BlockWriter* spill_ = nullptr;  // during Next(record, block, spill)
  // The manifest's CRC32C of the whole object, checked here rather than by
  // the ChunkReader when an uncompressed object is read from byte 0: the
  // whole's CRC is built from each record's, which the record check has
  // computed anyway, so every byte is checksummed once, not twice.
  bool verify_whole_ = false;
  uint32_t whole_crc_ = 0;  // of the bytes of the records read so far
  std::string scratch_;
  RecordReaderStats stats_;
  uint64_t fetched_by_old_sources_ = 0;
};

}  // namespace spool::records
