#include "spool/records/record_pool.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <vector>

#include <sys/mman.h>

#include <new>

#include "spool/core/executor.h"

namespace spool::records {

struct RecordPoolCore {
  RecordPoolCore(size_t size, uint64_t max_idle) : block_size(size), max_idle_bytes(max_idle) {}
  ~RecordPoolCore();

  const size_t block_size;
  const uint64_t max_idle_bytes;
  const uint64_t generation = ForkGeneration();
  std::mutex mu;
  // Idle blocks by size class (bit width of the size), most recently
  // returned last; guarded by mu. Records larger than a block get blocks of
  // their size rounded to pages, so equal large records reuse them too.
  std::vector<RecordBlock*> idle[65];
  uint64_t idle_blocks = 0;  // guarded by mu
  uint64_t idle_bytes = 0;   // guarded by mu
  std::atomic<uint64_t> blocks_made{0}, blocks_live{0}, bytes_live{0};
};

// Blocks are mapped directly rather than taken from malloc: freeing one gives
// its pages back at once, and blocks freed on one thread and made on another
// never strand memory in malloc's per-thread arenas (which otherwise grows
// the process well past the loader's budget).
char* MapBlock(size_t size) {
  void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) throw std::bad_alloc();
  return static_cast<char*>(data);
}

struct RecordBlock {
  ~RecordBlock() { ::munmap(data, size); }
  std::atomic<uint32_t> refs{1};
  char* data = nullptr;
  size_t size = 0;
  // Held while the block is referenced (so that the free list outlives the
  // pool object); dropped while the block sits on the free list.
  std::shared_ptr<RecordPoolCore> core;
};

RecordPoolCore::~RecordPoolCore() {
  for (auto& blocks : idle) {
    for (RecordBlock* block : blocks) delete block;
  }
}

namespace {

size_t SizeClass(size_t size) { return static_cast<size_t>(std::bit_width(size)); }

void ReleaseBlock(RecordBlock* block) {
  std::shared_ptr<RecordPoolCore> core = std::move(block->core);
  core->blocks_live.fetch_sub(1, std::memory_order_relaxed);
  core->bytes_live.fetch_sub(block->size, std::memory_order_relaxed);
  // After a fork the free list's lock may be held by a thread that is gone.
  if (core->generation == ForkGeneration()) {
    std::lock_guard lock(core->mu);
    if (core->idle_bytes + block->size <= core->max_idle_bytes) {
      core->idle_bytes += block->size;
      ++core->idle_blocks;
      core->idle[SizeClass(block->size)].push_back(block);
      return;
    }
  }
  delete block;
}

}  // namespace

BlockRef::BlockRef(const BlockRef& other) noexcept : block_(other.block_) {
  if (block_) block_->refs.fetch_add(1, std::memory_order_relaxed);
}

BlockRef& BlockRef::operator=(const BlockRef& other) noexcept {
  if (other.block_) other.block_->refs.fetch_add(1, std::memory_order_relaxed);
  Reset();
  block_ = other.block_;
  return *this;
}

BlockRef& BlockRef::operator=(BlockRef&& other) noexcept {
  if (this != &other) {
    Reset();
    block_ = std::exchange(other.block_, nullptr);
  }
  return *this;
}

void BlockRef::Reset() noexcept {
  RecordBlock* block = std::exchange(block_, nullptr);
  if (block && block->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) ReleaseBlock(block);
}

RecordPool::RecordPool(size_t block_size, uint64_t max_idle_bytes)
    : block_size_(std::max<size_t>(block_size, 4096)),
      core_(std::make_shared<RecordPoolCore>(block_size_, max_idle_bytes)) {}

RecordPool::~RecordPool() = default;

BlockRef RecordPool::Take(size_t min_size) {
  constexpr size_t kPage = 4096;
  const size_t size = min_size <= block_size_ ? block_size_ : (min_size + kPage - 1) / kPage * kPage;
  RecordBlock* block = nullptr;
  {
    std::lock_guard lock(core_->mu);
    std::vector<RecordBlock*>& idle = core_->idle[SizeClass(size)];
    // A class holds sizes up to twice each other: use the newest idle block
    // that is large enough, looking at a few only.
    for (size_t i = idle.size(), looked = 0; i > 0 && looked < 4; --i, ++looked) {
      if (idle[i - 1]->size >= size) {
        block = idle[i - 1];
        idle.erase(idle.begin() + static_cast<std::ptrdiff_t>(i - 1));
        core_->idle_bytes -= block->size;
        --core_->idle_blocks;
        break;
      }
    }
  }
  if (block == nullptr) {
    block = new RecordBlock;
    block->size = size;
    block->data = MapBlock(block->size);
    core_->blocks_made.fetch_add(1, std::memory_order_relaxed);
  }
  block->refs.store(1, std::memory_order_relaxed);
  block->core = core_;
  core_->blocks_live.fetch_add(1, std::memory_order_relaxed);
  core_->bytes_live.fetch_add(block->size, std::memory_order_relaxed);
  return BlockRef(block);
}

char* RecordPool::data(const BlockRef& block) { return block.block_->data; }
size_t RecordPool::capacity(const BlockRef& block) { return block.block_->size; }

uint64_t RecordPool::bytes_live() const { return core_->bytes_live.load(std::memory_order_relaxed); }

RecordPoolStats RecordPool::stats() const {
  RecordPoolStats out;
  out.blocks_made = core_->blocks_made.load(std::memory_order_relaxed);
  out.blocks_live = core_->blocks_live.load(std::memory_order_relaxed);
  out.bytes_live = core_->bytes_live.load(std::memory_order_relaxed);
  std::lock_guard lock(core_->mu);
  out.blocks_idle = core_->idle_blocks;
  out.bytes_idle = core_->idle_bytes;
  return out;
}

std::span<char> BlockWriter::Reserve(size_t n) {
  if (!current_ || used_ + n > RecordPool::capacity(current_)) {
    current_ = pool_->Take(n);
    used_ = 0;
  }
  return std::span<char>(RecordPool::data(current_) + used_, n);
}

PooledRecord BlockWriter::Commit(size_t n) {
  char* at = RecordPool::data(current_) + used_;
  used_ += n;
  PooledRecord out{current_, std::string_view(at, n)};
  // A block that a record filled to its end takes no more: let it go now so
  // it returns as soon as its records do.
  if (used_ == RecordPool::capacity(current_)) current_.Reset();
  return out;
}

PooledRecord BlockWriter::Copy(std::string_view bytes) {
  std::span<char> room = Reserve(bytes.size());
  if (!bytes.empty()) std::memcpy(room.data(), bytes.data(), bytes.size());
  return Commit(bytes.size());
}

}  // namespace spool::records
