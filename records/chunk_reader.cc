#include "records/chunk_reader.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace spool::records {

struct ChunkReader::Fetch {
  enum class State { kQueued, kRunning, kDone, kCancelled };

  std::mutex mu;
  std::condition_variable cv;
  State state = State::kQueued;
  uint64_t offset = 0;
  size_t size = 0;
  std::unique_ptr<char[]> buffer;
  ByteBudget* budget = nullptr;
  uint64_t leased = 0;  // bytes taken from `budget`, given back with the buffer
  Result<size_t> got = size_t{0};

  // Moves kQueued to kRunning; false if someone else got there first.
  bool Claim() {
    std::lock_guard lock(mu);
    if (state != State::kQueued) return false;
    state = State::kRunning;
    return true;
  }
  void Finish(Result<size_t> result) {
    std::lock_guard lock(mu);
    got = std::move(result);
    state = State::kDone;
    cv.notify_all();
  }
  ~Fetch() { ReleaseLease(); }
  void ReleaseLease() {
    if (leased != 0) budget->Release(leased);
    leased = 0;
  }
  void WaitDone() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return state == State::kDone; });
  }
};

ChunkReader::ChunkReader(std::shared_ptr<ReadableObject> object, std::string url, uint64_t start, uint64_t end,
                         const ReadAheadOptions& options)
    : object_(std::move(object)),
      url_(std::move(url)),
      position_(start),
      issue_offset_(start),
      end_(std::max(start, end)),
      options_(options) {
  options_.chunk_size = std::max<uint64_t>(options_.chunk_size, 4096);
  if (options_.executor == nullptr) options_.executor = &DefaultExecutor();
  if (options_.budget == nullptr) options_.budget = &DefaultByteBudget();
  max_in_flight_ = 1 + static_cast<size_t>((options_.read_ahead + options_.chunk_size - 1) / options_.chunk_size);
}

ChunkReader::~ChunkReader() {
  for (auto& fetch : in_flight_) {
    std::unique_lock lock(fetch->mu);
    if (fetch->state == Fetch::State::kQueued) {
      fetch->state = Fetch::State::kCancelled;
    } else {
      fetch->cv.wait(lock, [&] { return fetch->state == Fetch::State::kDone; });
    }
  }
}

void ChunkReader::Run(const std::shared_ptr<Fetch>& fetch, ReadableObject& object) {
  size_t filled = 0;
  while (filled < fetch->size) {
    auto got = object.ReadAt(fetch->offset + filled,
                             std::span<char>(fetch->buffer.get() + filled, fetch->size - filled));
    if (!got.ok()) {
      fetch->Finish(got.status());
      return;
    }
    if (*got == 0) break;  // the object is shorter than it was said to be
    filled += *got;
  }
  fetch->Finish(filled);
}

void ChunkReader::Issue(bool needed_now) {
  const size_t size = static_cast<size_t>(std::min<uint64_t>(options_.chunk_size, end_ - issue_offset_));
  auto fetch = std::make_shared<Fetch>();
  // Read-ahead only goes out while the budget has room; the chunk needed now
  // goes out regardless (see the header).
  fetch->budget = options_.budget;
  fetch->leased = options_.budget->TryAcquire(size);
  if (fetch->leased == 0 && !needed_now && size > 0) return;
  fetch->offset = issue_offset_;
  fetch->size = size;
  if (!spare_buffers_.empty() && size <= options_.chunk_size) {
    fetch->buffer = std::move(spare_buffers_.back());
    spare_buffers_.pop_back();
  } else {
    // Chunks share one size so buffers can be reused; no zero-fill.
    fetch->buffer = std::make_unique_for_overwrite<char[]>(options_.chunk_size);
  }
  issue_offset_ += size;
  in_flight_.push_back(fetch);
  if (options_.read_ahead == 0) return;  // fetched by the consumer in Next()
  std::shared_ptr<ReadableObject> object = object_;
  options_.executor->Submit([fetch, object] {
    if (fetch->Claim()) Run(fetch, *object);
  });
}

void ChunkReader::TopUp() {
  const size_t limit = options_.read_ahead == 0 ? 1 : max_in_flight_ - (current_ ? 1 : 0);
  while (in_flight_.size() < limit && issue_offset_ < end_) {
    const size_t before = in_flight_.size();
    Issue(/*needed_now=*/in_flight_.empty());
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
  if (fetch->Claim()) {
    Run(fetch, *object_);
  } else {
    fetch->WaitDone();
  }
  bytes_fetched_ += fetch->got.ok() ? *fetch->got : 0;
  if (!fetch->got.ok()) {
    Status error = fetch->got.status().WithContext("reading " + url_ + " at byte " + std::to_string(fetch->offset));
    Recycle(std::move(fetch));
    return error;
  }
  const size_t got = *fetch->got;
  if (got < fetch->size) {
    // A short read ends the object here; later fetches would only fail.
    end_ = fetch->offset + got;
    issue_offset_ = end_;
  }
  position_ = fetch->offset + got;
  current_ = std::move(fetch);
  TopUp();
  return std::span<const char>(current_->buffer.get(), got);
}

}  // namespace spool::records
