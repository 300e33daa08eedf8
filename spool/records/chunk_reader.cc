#include "spool/records/chunk_reader.h"

#include <algorithm>

#include "spool/core/crc32c.h"

namespace spool::records {

struct ChunkReader::Fetch {
  uint64_t offset = 0;
  size_t size = 0;
  BufferPool::Buffer buffer;  // or, reading into blocks:
  BlockRef block;
  ByteBudget* budget = nullptr;
  uint64_t leased = 0;  // bytes taken from `budget`, given back with the buffer
  size_t got = 0;       // set by the task
  std::shared_ptr<StealableTask> task;

  ~Fetch() { ReleaseLease(); }
  char* data() const { return block ? RecordPool::data(block) : buffer.data(); }
  void ReleaseLease() {
    if (leased != 0) budget->Release(leased);
    leased = 0;
  }
};

ChunkReader::ChunkReader(std::shared_ptr<ReadableObject> object, std::string url, uint64_t start, uint64_t end,
                         const ReadAheadOptions& options)
    : object_(std::move(object)),
      url_(std::move(url)),
      start_(start),
      position_(start),
      issue_offset_(start),
      end_(std::max(start, end)),
      options_(options) {
  options_.chunk_size = std::max<uint64_t>(options_.chunk_size, 4096);
  options_.first_chunk = std::max<uint64_t>(options_.first_chunk, 4096);
  if (options_.executor == nullptr) options_.executor = &DefaultExecutor();
  if (options_.budget == nullptr) options_.budget = &DefaultByteBudget();
  if (options_.buffers == nullptr) options_.buffers = &DefaultBufferPool();
  into_blocks_ = options_.blocks != nullptr && object_->reads_are_local();
  if (into_blocks_) {
    options_.chunk_size = options_.blocks->block_size();
    options_.read_ahead = 0;  // each block read when needed, on the consumer's thread (see the header)
  }
  max_in_flight_ = 1 + static_cast<size_t>((options_.read_ahead + options_.chunk_size - 1) / options_.chunk_size);
  verify_ = options_.expected_crc32c.has_value() && start == 0 && end == object_->info().size;
}

ChunkReader::~ChunkReader() {
  cancel_.Cancel();
  for (auto& fetch : in_flight_) fetch->task->Cancel().IgnoreError();
}

Status ChunkReader::Run(Fetch& fetch, ReadableObject& object) {
  size_t filled = 0;
  while (filled < fetch.size) {
    SPOOL_ASSIGN_OR_RETURN(
        size_t got, object.ReadAt(fetch.offset + filled, std::span<char>(fetch.data() + filled, fetch.size - filled)));
    if (got == 0) break;  // the object is shorter than it was said to be
    filled += got;
  }
  fetch.got = filled;
  return OkStatus();
}

void ChunkReader::Issue(bool needed_now) {
  // The first request asks for first_chunk only, so that the first records
  // arrive before a whole chunk has; a range of one chunk or less is still
  // one request (an object read whole is also checked whole by its store).
  const bool small_first = issue_offset_ == start_ && end_ - start_ > options_.chunk_size;
  const uint64_t chunk = small_first ? std::min(options_.chunk_size, options_.first_chunk) : options_.chunk_size;
  const size_t size = static_cast<size_t>(std::min<uint64_t>(chunk, end_ - issue_offset_));
  auto fetch = std::make_shared<Fetch>();
  // Read-ahead only goes out while the budget has room; the chunk needed now
  // goes out regardless (see the header).
  fetch->budget = options_.budget;
  fetch->leased = options_.budget->TryAcquire(size);
  if (fetch->leased == 0 && !needed_now && size > 0) return;
  fetch->offset = issue_offset_;
  fetch->size = size;
  if (into_blocks_) {
    // A fresh block each time: the last one may still be held by records.
    fetch->block = options_.blocks->Take(size);
  } else if (!spare_buffers_.empty()) {
    fetch->buffer = std::move(spare_buffers_.back());
    spare_buffers_.pop_back();
  } else {
    // Chunks share one size so buffers can be reused; no zero-fill.
    fetch->buffer = options_.buffers->Take(static_cast<size_t>(options_.chunk_size));
  }
  issue_offset_ += size;
  // Without read-ahead the consumer runs the fetch itself in Next().
  Executor* executor = options_.read_ahead == 0 ? nullptr : options_.executor;
  // Plain pointers are safe: the destructor cancels or waits for every task
  // before the fetches and the object go away.
  Fetch* raw = fetch.get();
  ReadableObject* object = object_.get();
  CancelScope scope(cancel_.token());
  fetch->task = StealableTask::Submit(executor, [raw, object] { return Run(*raw, *object); });
  in_flight_.push_back(std::move(fetch));
}

void ChunkReader::TopUp() {
  // Read-ahead starts at one request and doubles with each chunk handed out
  // (ramp_), up to max_in_flight_: a reader just opened does not share the
  // link between its first chunk and the rest of its read-ahead.
  // Without read-ahead (asked for, or a local object read into blocks) a
  // chunk is taken only when the consumer needs it: one taken ahead would sit
  // idle, its buffer or block pinned and leased, while this one is cut.
  const size_t limit =
      options_.read_ahead == 0 ? (current_ ? 0 : 1) : std::min(max_in_flight_ - (current_ ? 1 : 0), ramp_);
  while (in_flight_.size() < limit && issue_offset_ < end_) {
    const size_t before = in_flight_.size();
    // Only the chunk the consumer waits for may go beyond the budget.
    Issue(/*needed_now=*/in_flight_.empty() && current_ == nullptr);
    if (in_flight_.size() == before) break;  // budget full
  }
}

void ChunkReader::Recycle(std::shared_ptr<Fetch> fetch) {
  if (fetch == nullptr) return;
  fetch->ReleaseLease();
  if (fetch->buffer) spare_buffers_.push_back(std::move(fetch->buffer));
}

Result<std::span<const char>> ChunkReader::Next() {
  Recycle(std::move(current_));
  current_ = nullptr;
  if (position_ >= end_) return std::span<const char>();
  TopUp();
  std::shared_ptr<Fetch> fetch = in_flight_.front();
  in_flight_.pop_front();
  Status status = fetch->task->Wait();
  if (!status.ok()) {
    Status error = status.WithContext("reading " + url_ + " at byte " + std::to_string(fetch->offset));
    Recycle(std::move(fetch));
    return error;
  }
  const size_t got = fetch->got;
  bytes_fetched_ += got;
  if (got < fetch->size) {
    // A short read ends the object here; later fetches would only fail.
    end_ = fetch->offset + got;
    issue_offset_ = end_;
  }
  position_ = fetch->offset + got;
  current_ = std::move(fetch);
  ramp_ = std::min(2 * ramp_, max_in_flight_);
  if (verify_) {
    crc_ = crc32c::Extend(crc_, current_->data(), got);
    if (position_ >= end_ && got == current_->size && crc_ != *options_.expected_crc32c) {
      return DataLossError(url_ + ": the CRC32C of the whole object is " + crc32c::ToHex(crc_) +
                           " but its dataset manifest says " + crc32c::ToHex(*options_.expected_crc32c) +
                           "; the shard changed or was damaged after it was written");
    }
  }
  TopUp();
  return std::span<const char>(current_->data(), got);
}

const BlockRef& ChunkReader::block() const {
  static const BlockRef kNone;
  return current_ ? current_->block : kNone;
}

}  // namespace spool::records
