#include "spool/core/buffer_pool.h"

#include <atomic>
#include <utility>

#include "spool/core/executor.h"
#include "spool/core/per_process.h"

namespace spool {

BufferPool::BufferPool(uint64_t max_idle_bytes)
    : max_idle_bytes_(max_idle_bytes), generation_(ForkGeneration()) {}

BufferPool::~BufferPool() = default;

BufferPool::Buffer::Buffer(BufferPool* pool, LargeBuffer data, size_t size)
    : pool_(pool), data_(std::move(data)), size_(size) {}

BufferPool::Buffer::Buffer(Buffer&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}

BufferPool::Buffer& BufferPool::Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    GiveBack();
    pool_ = std::exchange(other.pool_, nullptr);
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

BufferPool::Buffer::~Buffer() { GiveBack(); }

void BufferPool::Buffer::GiveBack() {
  // In a child made by fork() the parent's pool may have been copied with
  // its mutex held: free instead.
  if (pool_ != nullptr && data_ != nullptr && pool_->generation_ == ForkGeneration()) {
    pool_->Return(std::move(data_), size_);
  }
  data_.reset();
  pool_ = nullptr;
  size_ = 0;
}

BufferPool::Buffer BufferPool::Take(size_t size) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = idle_.size(); i-- > 0;) {
      if (idle_[i].size != size) continue;
      LargeBuffer data = std::move(idle_[i].data);
      idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
      idle_bytes_ -= size;
      return Buffer(this, std::move(data), size);
    }
  }
  buffers_made_.fetch_add(1, std::memory_order_relaxed);
  return Buffer(this, AllocateLargeBuffer(size), size);
}

void BufferPool::Return(LargeBuffer data, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (size > max_idle_bytes_) return;  // freed as `data` goes out of scope
  // Keep the newest: drop the oldest idle buffers to make room.
  while (idle_bytes_ + size > max_idle_bytes_ && !idle_.empty()) {
    idle_bytes_ -= idle_.front().size;
    idle_.erase(idle_.begin());
  }
  idle_.push_back(Idle{std::move(data), size});
  idle_bytes_ += size;
}

uint64_t BufferPool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_bytes_;
}

BufferPool& DefaultBufferPool() {
  static std::atomic<internal::PerProcess<BufferPool>*> current{nullptr};
  static std::mutex mu;
  // Never destroyed: buffers still owned at exit give themselves back to it.
  return internal::CurrentOf(current, mu, [] { return new BufferPool(32ull << 20); });
}

}  // namespace spool
