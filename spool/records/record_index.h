// Index files in NVIDIA DALI's tfrecord2idx format: one line per record,
// "<offset> <size>\n", where offset is the record's byte offset in the file
// and size = 12 + payload length + 4. They describe uncompressed shards only
// and live beside them as "<shard>.idx". With one, a reader (or a data loader
// splitting a shard by record ranges) seeks straight to record i.
//
// RecordIndex is a value; its methods are thread-safe on const objects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool::records {

struct IndexEntry {
  uint64_t offset = 0;
  uint64_t size = 0;  // whole framed record: 16 + payload
  friend bool operator==(const IndexEntry&, const IndexEntry&) = default;
};

class RecordIndex {
 public:
  RecordIndex() = default;
  explicit RecordIndex(std::vector<IndexEntry> entries) : entries_(std::move(entries)) {}

  // Parses index text. Strict: each line must be two decimal numbers
  // separated by blanks; offsets must follow each other (offset[i+1] ==
  // offset[i] + size[i]); sizes at least 16; and, when `file_size` is given,
  // the records must end exactly at it. Errors are InvalidArgument naming
  // `what` (the index URL) and the line; they suggest rebuilding the index.
  static Result<RecordIndex> Parse(std::string_view text, std::string_view what,
                                   std::optional<uint64_t> file_size = std::nullopt);

  // Reads and parses the index object `index_key`; checks it against the
  // shard's size when `shard_size` is given. NotFound if there is none.
  static Result<RecordIndex> Load(ObjectStore& store, std::string_view index_key,
                                  std::optional<uint64_t> shard_size = std::nullopt);

  // Reads the uncompressed shard `shard_key` (checking every CRC) and
  // returns its index. InvalidArgument for compressed shards; DataLoss for
  // one whose records end before the object does (cut inside a header).
  static Result<RecordIndex> Build(ObjectStore& store, std::string_view shard_key);

  // The DALI text: "<offset> <size>\n" per record.
  std::string Serialize() const;

  void Add(uint64_t offset, uint64_t size) { entries_.push_back({offset, size}); }
  const std::vector<IndexEntry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  // Byte offset just past the last record (0 for an empty index).
  uint64_t end_offset() const { return entries_.empty() ? 0 : entries_.back().offset + entries_.back().size; }
  // The index of the record starting at `offset`, if one does.
  std::optional<uint64_t> RecordAt(uint64_t offset) const;

  friend bool operator==(const RecordIndex&, const RecordIndex&) = default;

 private:
  std::vector<IndexEntry> entries_;
};

// "<shard_key>.idx": where spool writes and looks for a shard's index.
std::string IndexKeyFor(std::string_view shard_key);

}  // namespace spool::records
