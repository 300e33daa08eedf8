// The machinery behind DataLoader (internal): one Pipeline delivers one
// worker's batches from a starting (epoch, position) until the last epoch,
// an error, or Close.
//
// Threads: the consumer calls Next(); fetch tasks run on the executor, one
// per open shard at a time; the assembler runs under the pipeline's mutex on
// whichever thread changed what it waits for (a fetch task that brought
// records, or the consumer that took a batch).
//
// Lifetime: fetch tasks run under the pipeline's CancelSource and in its
// TaskGroup. Close() cancels the source (requests in flight are abandoned
// within about a second) and waits for every fetch task, so no task of a
// closed pipeline runs afterwards; the destructor closes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "spool/core/buffer_pool.h"
#include "spool/core/cancel.h"
#include "spool/core/executor.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/loader/inputs.h"
#include "spool/records/loader/interleave.h"
#include "spool/records/loader/loader_state.h"
#include "spool/records/loader/options.h"
#include "spool/records/loader/plan.h"
#include "spool/records/loader/record_order.h"
#include "spool/records/loader/shard_cache.h"
#include "spool/records/loader/shuffle_buffer.h"
#include "spool/records/record_reader.h"

namespace spool::loader {

// A FIFO that keeps its storage: std::deque frees and allocates a node every
// few items, and the loader makes no allocation per record. Items taken are
// reset at once (a record's block returns as soon as the record moves on);
// the taken front is dropped when it is half the vector, so the storage
// stays within twice the most items queued. Not thread-safe.
template <typename T>
class ReusedQueue {
 public:
  bool empty() const { return head_ == items_.size(); }
  T& front() { return items_[head_]; }
  void push_back(T item) { items_.push_back(std::move(item)); }
  void pop_front() {
    items_[head_++] = T();
    if (head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ * 2 >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

// Counters that outlive a pipeline (a Resume starts a new one), and the
// record pool every pipeline of the loader fills.
struct CounterBlock {
  std::shared_ptr<RecordPool> pool;
  uint64_t record_blocks_at_open = 0;  // the pool's blocks_made when the loader opened
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();
  // Where the loader's stores count their requests, and their value at Open
  // (DataLoader::Open sets both before the first pipeline starts).
  std::shared_ptr<RequestCounters> requests = std::make_shared<RequestCounters>();
  RequestCounts requests_at_open;
  std::atomic<uint64_t> records{0}, bytes{0}, object_bytes{0}, wait_nanos{0};
  std::atomic<uint64_t> skipped_records{0}, skipped_shards{0}, peak_buffered{0}, budget_overruns{0};
  LatencyHistogram next_wait;  // per DataLoader::Next() call
  bool owns_requests = false;  // `requests` were made for this loader (not a caller's store's)
};

class Pipeline {
 public:
  struct Config {
    DataLoaderOptions options;
    uint64_t worker = 0;
    uint64_t workers = 1;
    std::shared_ptr<const std::vector<ShardInfo>> shards;
    std::shared_ptr<CounterBlock> counters;
    std::shared_ptr<ShardCache> cache;  // null: shards are read from their store
  };

  explicit Pipeline(Config config);
  ~Pipeline();  // Close()
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Positions the pipeline at `state` (replaying the order and reading the
  // shuffle buffer's records back when position > 0) and starts fetching.
  Status Start(const LoaderState& state);
  Result<std::optional<Batch>> Next();
  LoaderState State() const;
  // Stops fetching, wakes a waiting Next() and waits for the fetch tasks.
  // Idempotent; any thread but a fetch task.
  void Close();
  uint64_t buffered_bytes() const;
  // Chunk buffers the shard readers took from the system (read_buffers_).
  uint64_t read_buffers_made() const { return read_buffers_->buffers_made(); }
  // Paused: no fetch starts unless Next() waits for data. Fetches in flight
  // finish.
  void SetPaused(bool paused);

 private:
  struct Item {
    PooledRecord record;  // a view of a pooled block
    std::optional<tensorflow::Example> example;
    uint64_t bytes = 0;  // what it counts against the budget
  };
  struct ReadyBatch {
    Batch batch;
    uint64_t bytes = 0;          // counted against the budget
    uint64_t payload_bytes = 0;  // delivered to the user
  };
  // One segment of the plan being read.
  struct Stream {
    uint64_t epoch = 0;
    size_t segment = 0;
    Segment range;                   // end includes this epoch's known truncation
    uint64_t next_record = 0;        // shard record index of the next fetch
    std::unique_ptr<records::RecordReader> reader;  // used by the fetch task in flight only
    std::optional<BlockWriter> writer;              // likewise: fills the pool's blocks
    std::vector<Item> spare_items;                  // the last fetch's vector, kept for its capacity
    ReusedQueue<Item> queue;
    uint64_t queued_bytes = 0;
    bool fetching = false;
    bool ended = false;
    Status error;  // with kFail: what ended the stream
  };
  struct FetchResult {
    std::vector<Item> items;
    uint64_t bytes = 0;
    bool end = false;
    Status error;
    std::optional<uint64_t> cut_at;  // kSkip: the shard's records end here
    uint64_t object_bytes = 0;
  };

  // Under mu_.
  Status StartEpochLocked(uint64_t epoch);
  void PumpLocked();
  void AssembleLocked();
  void AdmitFetchesLocked();
  void EmitBatchLocked();
  std::shared_ptr<Stream> StreamLocked(size_t segment);
  void AccountLocked(int64_t delta);
  uint64_t buffered_bytes_locked() const;
  uint64_t held_locked() const;
  uint64_t ShuffleSeed(uint64_t epoch) const;
  void RecordCutLocked(Stream& stream, uint64_t cut_at);
  std::optional<uint64_t> CutFor(uint64_t epoch, uint32_t shard) const;

  // Off the lock.
  void RunFetch(std::shared_ptr<Stream> stream, uint64_t reserved);
  FetchResult Fetch(Stream& stream, uint64_t reserved);
  Result<std::unique_ptr<records::RecordReader>> OpenReader(const Segment& range, uint64_t first_record,
                                                            uint64_t epoch);
  records::RecordReaderOptions ReaderOptions() const;
  Status ParseInto(Item& item, const records::RecordReader& reader) const;
  Result<uint64_t> SegmentLength(const Segment& segment, uint64_t epoch);
  // The records the replay left in the shuffle buffer, read back in order.
  Result<std::vector<Item>> Materialize(const std::vector<RecordRef>& refs);

  const Config config_;
  const DataLoaderOptions& options_;
  Executor& executor_;
  // Bytes read ahead by the shard readers; the rest of memory_budget is for
  // decoded records (capacity_).
  std::unique_ptr<ByteBudget> read_ahead_budget_;
  // The shard readers' chunk buffers, kept for the next reader when one
  // ends. The process's default pool keeps 32 MiB idle, less than the
  // interleaved readers' read-ahead, so a new shard's reader took fresh
  // buffers, each a huge-page fault that zeroes 2 MiB (a tenth of the
  // loader's CPU over page-cached shards, bench/results/*-loader-io-pool.md).
  // Idle buffers stay within the readers' share of memory_budget. Declared
  // before anything that holds a reader, so that it is destroyed after them.
  std::unique_ptr<BufferPool> read_buffers_;
  uint64_t reader_chunk_ = 0;       // bytes per ranged read
  uint64_t reader_read_ahead_ = 0;  // bytes in flight per reader
  uint64_t capacity_ = 0;
  std::atomic<int> open_readers_{0};  // readers that exist now (each may hold one chunk)
  std::atomic<int> block_readers_{0};  // of those, readers that read into the pool's blocks
  std::atomic<bool> stopping_{false};  // Close() was called: fetch tasks return early
  CancelSource cancel_;                // cancelled by Close(): the fetches' requests stop
  TaskGroup fetches_;                  // every fetch task; Close() waits for it

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  bool closed_ = false;
  bool finished_ = false;
  bool paused_ = false;
  int consumers_waiting_ = 0;  // in Next(), waiting for a batch
  Status error_;

  // The order (assembler side).
  uint64_t epoch_ = 0;
  std::vector<Segment> plan_;
  std::optional<InterleaveSchedule> schedule_;
  std::optional<ShuffleBuffer<Item>> shuffle_;
  bool input_ended_ = false;
  uint64_t epoch_records_ = 0;  // records assembled in epoch_
  std::map<size_t, std::shared_ptr<Stream>> streams_;
  std::optional<size_t> waiting_for_;  // the segment the assembler waits on
  std::vector<size_t> window_, sloppy_window_;  // scratch of AdmitFetchesLocked and the assembler
  std::vector<Item> batch_;
  uint64_t batch_bytes_ = 0;
  std::deque<ReadyBatch> ready_;
  int fetches_in_flight_ = 0;
  uint64_t in_use_ = 0;  // decoded bytes held: queues, shuffle buffer, batches (see held_locked)
  // kSkip cuts: epoch -> shard -> records readable.
  std::map<uint64_t, std::map<uint32_t, uint64_t>> cuts_;

  // The consumer's position (what State() reports).
  uint64_t state_epoch_ = 0;
  uint64_t state_position_ = 0;
};

}  // namespace spool::loader
