#include "spool/records/record_reader.h"

#include <algorithm>
#include <cstring>

#include "spool/core/crc32c.h"
#include "spool/records/framing.h"

namespace spool::records {

// Where the bytes of the record stream come from: the object itself, or its
// decompressed stream. A block stays valid until the next call.
class RecordReader::BlockSource {
 public:
  virtual ~BlockSource() = default;
  virtual Result<std::span<const char>> Next() = 0;  // empty at the end
  virtual uint64_t fetched() const = 0;
  // The pooled block the last block's bytes lie in, if they lie in one.
  virtual const BlockRef* block() const { return nullptr; }
};

class RecordReader::RawBlocks final : public BlockSource {
 public:
  explicit RawBlocks(std::unique_ptr<ChunkReader> chunks) : chunks_(std::move(chunks)) {}
  Result<std::span<const char>> Next() override { return chunks_->Next(); }
  uint64_t fetched() const override { return chunks_->bytes_fetched(); }
  const BlockRef* block() const override { return chunks_->block() ? &chunks_->block() : nullptr; }

 private:
  std::unique_ptr<ChunkReader> chunks_;
};

class RecordReader::InflatedBlocks final : public BlockSource {
 public:
  InflatedBlocks(std::unique_ptr<ChunkReader> chunks, std::unique_ptr<Inflater> inflater, size_t block_size,
                 std::string url, Compression compression)
      : chunks_(std::move(chunks)),
        inflater_(std::move(inflater)),
        block_size_(std::max<size_t>(block_size, 4096)),
        out_(std::make_unique_for_overwrite<char[]>(block_size_)),
        url_(std::move(url)),
        compression_(compression) {}

  Result<std::span<const char>> Next() override {
    while (!inflater_->done()) {
      if (input_.empty() && !input_ended_) {
        SPOOL_ASSIGN_OR_RETURN(input_, chunks_->Next());
        input_ended_ = input_.empty();
      }
      const uint64_t compressed_offset = chunks_->position() - input_.size();
      auto step = inflater_->Inflate(input_, std::span<char>(out_.get(), block_size_));
      if (!step.ok()) {
        return DataLossError("cannot decompress " + url_ + " as " + std::string(CompressionName(compression_)) +
                             " at compressed byte " + std::to_string(compressed_offset) + ": " +
                             step.status().message() +
                             "; the file is damaged, or not compressed that way (check its extension)");
      }
      input_ = input_.subspan(step->consumed);
      if (step->produced > 0) return std::span<const char>(out_.get(), step->produced);
      if (input_.empty() && input_ended_) {
        // Nothing left in or out: the end, clean only between members.
        if (inflater_->at_boundary()) break;
        return DataLossError("the " + std::string(CompressionName(compression_)) + " stream of " + url_ +
                             " ends early at compressed byte " + std::to_string(compressed_offset) +
                             ": the file was cut short; re-create it");
      }
      if (step->consumed == 0 && !input_.empty() && !inflater_->done()) {
        return InternalError("inflate made no progress on " + url_ + " at compressed byte " +
                             std::to_string(compressed_offset));
      }
    }
    return std::span<const char>();
  }
  uint64_t fetched() const override { return chunks_->bytes_fetched(); }

 private:
  std::unique_ptr<ChunkReader> chunks_;
  std::unique_ptr<Inflater> inflater_;
  const size_t block_size_;
  std::unique_ptr<char[]> out_;
  std::span<const char> input_;
  bool input_ended_ = false;
  std::string url_;
  Compression compression_;
};

namespace {

constexpr std::string_view kSkipAdvice =
    "re-create the file, or read it with CorruptPolicy::kSkipRestOfShard to keep the records before it";

Status Corrupted(uint64_t offset, const std::string& url, std::string_view what) {
  std::string message = "corrupted record at " + std::to_string(offset);
  if (offset == 0) message += " (Is this even a TFRecord file?)";
  message += " in " + url + ": " + std::string(what) + "; " + std::string(kSkipAdvice);
  return DataLossError(message);
}

Status Truncated(uint64_t offset, const std::string& url, uint64_t length) {
  return DataLossError("truncated record at " + std::to_string(offset) + " in " + url +
                       ": the data ends inside a record of " + std::to_string(length) +
                       " bytes (the file was cut short); " + std::string(kSkipAdvice));
}

}  // namespace

RecordReader::RecordReader(std::shared_ptr<ReadableObject> object, std::string url, ObjectStore* store,
                           std::string key, Compression compression, const RecordReaderOptions& options)
    : object_(std::move(object)),
      url_(std::move(url)),
      store_(store),
      key_(std::move(key)),
      compression_(compression),
      options_(options) {}

RecordReader::~RecordReader() = default;

Result<std::unique_ptr<RecordReader>> RecordReader::Open(ObjectStore& store, std::string_view key,
                                                         const RecordReaderOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> object, store.OpenRead(key));
  return Open(std::shared_ptr<ReadableObject>(std::move(object)), store, std::string(key), options);
}

Result<std::unique_ptr<RecordReader>> RecordReader::Open(std::shared_ptr<ReadableObject> object, ObjectStore& store,
                                                         std::string key, const RecordReaderOptions& options) {
  if (object == nullptr) return InvalidArgumentError("RecordReader::Open needs an object");
  const Compression compression = options.compression.value_or(CompressionFromExtension(key));
  std::string url = store.Describe(key);
  return std::unique_ptr<RecordReader>(
      new RecordReader(std::move(object), std::move(url), &store, std::move(key), compression, options));
}

Result<std::unique_ptr<RecordReader>> RecordReader::Open(std::shared_ptr<ReadableObject> object, std::string url,
                                                         const RecordReaderOptions& options) {
  if (object == nullptr) return InvalidArgumentError("RecordReader::Open needs an object");
  const Compression compression = options.compression.value_or(CompressionFromExtension(url));
  return std::unique_ptr<RecordReader>(
      new RecordReader(std::move(object), std::move(url), nullptr, "", compression, options));
}

RecordReaderStats RecordReader::stats() const {
  RecordReaderStats stats = stats_;
  stats.object_bytes = fetched_by_old_sources_ + (source_ ? source_->fetched() : 0);
  return stats;
}

Status RecordReader::EnsureSource() {
  if (source_) return OkStatus();
  const uint64_t size = object_size();
  if (compression_ == Compression::kNone) {
    ReadAheadOptions io = options_.io;
    verify_whole_ = io.expected_crc32c.has_value() && source_start_ == 0;
    whole_crc_ = 0;
    if (verify_whole_) io.expected_crc32c.reset();  // checked from the records (see the header)
    source_ = std::make_unique<RawBlocks>(std::make_unique<ChunkReader>(object_, url_, source_start_, size, io));
    stream_pos_ = source_start_;
    return OkStatus();
  }
  SPOOL_ASSIGN_OR_RETURN(auto inflater, Inflater::Create(compression_, options_.inflate_engine));
  // Records are cut from the inflated output, never from the chunks read.
  ReadAheadOptions io = options_.io;
  io.blocks = nullptr;
  source_ = std::make_unique<InflatedBlocks>(std::make_unique<ChunkReader>(object_, url_, 0, size, io),
                                             std::move(inflater), options_.inflate_block_size, url_, compression_);
  stream_pos_ = 0;
  return Discard(source_start_);
}

Status RecordReader::Restart(uint64_t offset) {
  if (source_) fetched_by_old_sources_ += source_->fetched();
  source_.reset();
  block_ = {};
  finished_ = false;
  source_start_ = offset;
  stream_pos_ = offset;
  // Compressed streams decompress up to the offset now, so errors show here.
  if (compression_ != Compression::kNone && offset != 0) return EnsureSource();
  return OkStatus();
}

Status RecordReader::Discard(uint64_t n) {
  while (n > 0) {
    if (block_.empty()) {
      SPOOL_ASSIGN_OR_RETURN(block_, source_->Next());
      if (block_.empty()) {
        return OutOfRangeError("offset " + std::to_string(stream_pos_ + n) + " is past the end of the records in " +
                               url_ + " (" + std::to_string(stream_pos_) + " bytes)");
      }
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, block_.size()));
    block_ = block_.subspan(take);
    stream_pos_ += take;
    n -= take;
  }
  return OkStatus();
}

Result<size_t> RecordReader::Gather(char* dest, size_t n) {
  size_t got = 0;
  while (got < n) {
    if (block_.empty()) {
      SPOOL_ASSIGN_OR_RETURN(block_, source_->Next());
      if (block_.empty()) break;
    }
    const size_t take = std::min(n - got, block_.size());
    std::memcpy(dest + got, block_.data(), take);
    block_ = block_.subspan(take);
    stream_pos_ += take;
    got += take;
  }
  return got;
}

Status RecordReader::GatherInto(std::string& dest, uint64_t n, bool* complete) {
  dest.clear();
  while (dest.size() < n) {
    if (block_.empty()) {
      SPOOL_ASSIGN_OR_RETURN(block_, source_->Next());
      if (block_.empty()) break;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n - dest.size(), block_.size()));
    dest.append(block_.data(), take);
    block_ = block_.subspan(take);
    stream_pos_ += take;
  }
  *complete = dest.size() == n;
  return OkStatus();
}

Status RecordReader::WholeCrcMismatch() const {
  return DataLossError(url_ + ": the CRC32C of the whole object is " + crc32c::ToHex(whole_crc_) +
                       " but its dataset manifest says " + crc32c::ToHex(*options_.io.expected_crc32c) +
                       "; the shard changed or was damaged after it was written");
}

Result<bool> RecordReader::Fail(Status status) {
  // Leave the reader at the start of the failed record: Next() retries it
  // (after an I/O error), next_offset() is where to resume.
  const uint64_t offset = record_start_;
  if (source_) fetched_by_old_sources_ += source_->fetched();
  source_.reset();
  block_ = {};
  source_start_ = offset;
  stream_pos_ = offset;
  if (status.code() == StatusCode::kDataLoss && options_.on_corrupt == CorruptPolicy::kSkipRestOfShard) {
    finished_ = true;
    stats_.skipped_rest = true;
    stats_.skip_reason = std::move(status);
    return false;
  }
  return status;
}

Result<bool> RecordReader::ReadRecord(std::string_view* record) {
  if (finished_) return false;
  record_start_ = stream_pos_;
  if (Status status = EnsureSource(); !status.ok()) return Fail(std::move(status));
  const uint64_t offset = stream_pos_;
  if (offset >= options_.end_offset) {
    finished_ = true;
    return false;
  }

  char header_copy[kHeaderSize];
  const char* header = header_copy;
  if (block_.size() >= kHeaderSize) {
    header = block_.data();
    block_ = block_.subspan(kHeaderSize);
    stream_pos_ += kHeaderSize;
  } else {
    auto got = Gather(header_copy, kHeaderSize);
    if (!got.ok()) return Fail(got.status());
    if (*got < kHeaderSize) {
      // 0 bytes: the end. 1 to 11: a partial header, which TensorFlow also
      // reads as the end of the file (OutOfRange).
      if (verify_whole_) {
        whole_crc_ = crc32c::Extend(whole_crc_, header_copy, *got);
        if (whole_crc_ != *options_.io.expected_crc32c) return Fail(WholeCrcMismatch());
      }
      finished_ = true;
      return false;
    }
  }
  const uint64_t length = DecodeFixed64(header);
  if (DecodeFixed32(header + 8) != MaskedCrc(header, 8)) {
    return Fail(Corrupted(offset, url_, "the length's checksum does not match"));
  }

  // Now: `header` may point into a chunk that gathering the payload recycles.
  if (verify_whole_) whole_crc_ = crc32c::Extend(whole_crc_, header, kHeaderSize);

  const uint64_t need = length + kFooterSize;
  if (length > UINT64_MAX - kFramingSize - offset ||
      (compression_ == Compression::kNone && offset + kFramingSize + length > object_size())) {
    return Fail(Truncated(offset, url_, length));
  }
  const char* payload;
  if (block_.size() >= need) {
    record_in_ = RecordBytesIn::kChunk;
    payload = block_.data();
    block_ = block_.subspan(need);
    stream_pos_ += need;
  } else if (spill_ != nullptr && compression_ == Compression::kNone) {
    // The length was checked against the object's size above, so the room
    // asked for exists to be read.
    std::span<char> room = spill_->Reserve(static_cast<size_t>(need));
    Result<size_t> got = Gather(room.data(), room.size());
    if (!got.ok()) return Fail(got.status());
    if (*got < need) return Fail(Truncated(offset, url_, length));
    payload = room.data();
    record_in_ = RecordBytesIn::kSpill;
  } else {
    bool complete = false;
    if (Status status = GatherInto(scratch_, need, &complete); !status.ok()) return Fail(std::move(status));
    if (!complete) return Fail(Truncated(offset, url_, length));
    payload = scratch_.data();
    record_in_ = RecordBytesIn::kScratch;
  }
  const uint32_t payload_crc = crc32c::Value(payload, length);
  if (DecodeFixed32(payload + length) != crc32c::Mask(payload_crc)) {
    // TensorFlow names the payload's offset for this one.
    return Fail(Corrupted(offset + kHeaderSize, url_, "the payload's checksum does not match"));
  }
  if (verify_whole_) {
    // Combine costs a few hundred nanoseconds whatever the length; below
    // 16 KiB a second pass over bytes still in the cache costs less.
    whole_crc_ = length >= (16 << 10) ? crc32c::Combine(whole_crc_, payload_crc, length)
                                      : crc32c::Extend(whole_crc_, payload, length);
    whole_crc_ = crc32c::Extend(whole_crc_, payload + length, kFooterSize);
    // The last record: checked before it is handed out (a reader that
    // stops after the records it expects never reads the end).
    if (stream_pos_ == object_size() && whole_crc_ != *options_.io.expected_crc32c) {
      return Fail(WholeCrcMismatch());
    }
  }
  *record = std::string_view(payload, length);
  record_offset_ = offset;
  if (next_index_) ++*next_index_;
  return true;
}

Result<bool> RecordReader::Next(std::string_view* record) {
  SPOOL_ASSIGN_OR_RETURN(bool more, ReadRecord(record));
  if (more) {
    ++stats_.records;
    stats_.payload_bytes += record->size();
  }
  return more;
}

Result<bool> RecordReader::Next(std::string_view* record, BlockRef* block, BlockWriter* spill) {
  block->Reset();
  spill_ = spill;
  Result<bool> more = Next(record);
  spill_ = nullptr;
  if (!more.ok() || !*more) return more;
  if (record_in_ == RecordBytesIn::kChunk) {
    if (source_ != nullptr && source_->block() != nullptr) *block = *source_->block();
  } else if (record_in_ == RecordBytesIn::kSpill) {
    *block = spill->Commit(record->size()).block;  // the view is of the room Reserve lent
  }
  return more;
}

Result<bool> RecordReader::Next(std::string* record) {
  std::string_view view;
  SPOOL_ASSIGN_OR_RETURN(bool more, Next(&view));
  if (more) record->assign(view.data(), view.size());
  return more;
}

Status RecordReader::SeekToOffset(uint64_t offset) {
  if (compression_ == Compression::kNone && offset > object_size()) {
    return OutOfRangeError("offset " + std::to_string(offset) + " is past the end of " + url_ + " (" +
                           std::to_string(object_size()) + " bytes)");
  }
  if (compression_ != Compression::kNone && source_ && offset >= stream_pos_) {
    finished_ = false;
    SPOOL_RETURN_IF_ERROR(Discard(offset - stream_pos_));
  } else {
    SPOOL_RETURN_IF_ERROR(Restart(offset));
  }
  if (offset == 0) {
    next_index_ = 0;
  } else {
    next_index_ = index_ ? index_->RecordAt(offset) : std::nullopt;
  }
  return OkStatus();
}

void RecordReader::SetIndex(RecordIndex index) {
  index_ = std::move(index);
  index_looked_up_ = true;
}

Status RecordReader::LoadIndexIfPresent() {
  if (index_looked_up_) return OkStatus();
  index_looked_up_ = true;
  if (store_ == nullptr || compression_ != Compression::kNone) return OkStatus();
  auto index = RecordIndex::Load(*store_, IndexKeyFor(key_), object_size());
  if (index.ok()) {
    index_ = std::move(*index);
    return OkStatus();
  }
  if (index.status().code() == StatusCode::kNotFound) return OkStatus();
  return index.status();
}

Status RecordReader::SeekToRecord(uint64_t index) {
  // Already there (a fresh reader is at record 0): no index lookup needed.
  if (next_index_ == index) return OkStatus();
  if (index == 0) return SeekToOffset(0);
  SPOOL_RETURN_IF_ERROR(LoadIndexIfPresent());
  const auto past_end = [&](uint64_t count) {
    return OutOfRangeError("record " + std::to_string(index) + " is past the end of " + url_ + ", which has " +
                           std::to_string(count) + " records");
  };
  if (index_) {
    if (index > index_->size()) return past_end(index_->size());
    const uint64_t offset = index == index_->size() ? index_->end_offset() : index_->entries()[index].offset;
    SPOOL_RETURN_IF_ERROR(SeekToOffset(offset));
    next_index_ = index;
    return OkStatus();
  }
  if (!next_index_ || *next_index_ > index) {
    SPOOL_RETURN_IF_ERROR(Restart(0));
    next_index_ = 0;
  }
  std::string_view skipped;
  while (*next_index_ < index) {
    SPOOL_ASSIGN_OR_RETURN(bool more, ReadRecord(&skipped));
    if (!more) return past_end(*next_index_);
  }
  return OkStatus();
}

}  // namespace spool::records
