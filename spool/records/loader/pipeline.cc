#include "spool/records/loader/pipeline.h"

#include <algorithm>
#include <utility>

#include "spool/core/log.h"
#include "spool/records/example.h"
#include "spool/records/loader/prng.h"

namespace spool::loader {
namespace {

// What one buffered record costs beyond its payload (its view, block
// reference and queue bookkeeping), so that budgets hold for tiny records too.
constexpr uint64_t kItemOverhead = 64;

// What a stream's first fetch decodes before handing its records over
// (Fetch): 64 records of 1 KB, or one of 64 KiB.
constexpr uint64_t kFirstFetchBytes = 64 << 10;

void AtomicMax(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t seen = target.load(std::memory_order_relaxed);
  while (value > seen && !target.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

Pipeline::Pipeline(Config config)
    : config_(std::move(config)),
      options_(config_.options),
      executor_(options_.executor ? *options_.executor : DefaultExecutor()),
      fetches_(executor_) {
  // I/O buffers get a third of the budget, split evenly over the readers
  // that may be open at once: each keeps up to reader_read_ahead_ bytes of
  // ranged reads in flight (or as spare buffers), plus the chunk being
  // consumed and one block of decompressed output.
  const uint64_t readers = static_cast<uint64_t>(std::max(options_.interleave, 1) + std::max(options_.prefetch_shards, 0));
  const uint64_t share = options_.memory_budget / 3 / readers;
  reader_chunk_ = std::clamp<uint64_t>(std::min(options_.read_ahead / 4, share / 4), 64 << 10, 4 << 20);
  reader_read_ahead_ = std::min(options_.read_ahead, share > 2 * reader_chunk_ ? share - 2 * reader_chunk_ : 0);
  read_ahead_budget_ = std::make_unique<ByteBudget>(std::max<uint64_t>(readers * reader_read_ahead_, 1));
  const uint64_t fixed = readers * (reader_read_ahead_ + 2 * reader_chunk_);
  read_buffers_ = std::make_unique<BufferPool>(fixed);
  capacity_ = options_.memory_budget > fixed ? options_.memory_budget - fixed : 0;
}

Pipeline::~Pipeline() { Close(); }

uint64_t Pipeline::ShuffleSeed(uint64_t epoch) const {
  return DeriveSeed({options_.seed, epoch, config_.worker, config_.workers, 0x5u});
}

Status Pipeline::Start(const LoaderState& state) {
  if (capacity_ < 2 * options_.fetch_chunk) {
    return InvalidArgumentError(
        "memory_budget " + std::to_string(options_.memory_budget) +
        " bytes leaves too little for decoded records after read-ahead (interleave + "
        "prefetch_shards readers x read_ahead) and two fetch_chunks; raise memory_budget or lower "
        "read_ahead or fetch_chunk");
  }
  // What Start reads and submits is the pipeline's work: Close cancels it.
  CancelScope scope(cancel_.token());
  std::unique_lock lock(mu_);
  for (const auto& cut : state.truncated) cuts_[state.epoch][cut.shard] = cut.records;
  state_epoch_ = state.epoch;
  state_position_ = state.position;
  if (options_.epochs != 0 && state.epoch >= options_.epochs) {
    finished_ = true;
    return OkStatus();
  }
  SPOOL_RETURN_IF_ERROR(StartEpochLocked(state.epoch));
  if (state.position > 0) {
    // Replay the order on record numbers, then read back only what the
    // shuffle buffer held at that point. Nothing runs concurrently yet.
    lock.unlock();
    auto length = [&](size_t segment) { return SegmentLength(plan_[segment], state.epoch); };
    SPOOL_ASSIGN_OR_RETURN(ReplayPoint point,
                           ReplayOrder(plan_.size(), options_.interleave, options_.interleave_block,
                                       options_.shuffle_buffer, ShuffleSeed(state.epoch), state.position, length));
    SPOOL_ASSIGN_OR_RETURN(std::vector<Item> items, Materialize(point.buffered));
    lock.lock();
    schedule_ = point.schedule;
    input_ended_ = point.input_ended;
    shuffle_->set_rng_state(point.shuffle_rng_state);
    for (Item& item : items) {
      AccountLocked(static_cast<int64_t>(item.bytes));
      shuffle_->Push(std::move(item));
    }
    epoch_records_ = state.position;
    for (size_t segment : schedule_->Active()) {
      StreamLocked(segment)->next_record = plan_[segment].begin + point.taken[segment];
    }
  }
  PumpLocked();
  return OkStatus();
}

Status Pipeline::StartEpochLocked(uint64_t epoch) {
  std::vector<std::optional<uint64_t>> counts;
  counts.reserve(config_.shards->size());
  for (const ShardInfo& shard : *config_.shards) counts.push_back(shard.records);
  SPOOL_ASSIGN_OR_RETURN(plan_, PlanWorkerEpoch(counts, options_.seed, epoch, options_.shuffle_shards,
                                                config_.worker, config_.workers));
  epoch_ = epoch;
  schedule_.emplace(plan_.size(), options_.interleave, options_.interleave_block);
  shuffle_.emplace(options_.shuffle_buffer, ShuffleSeed(epoch));
  input_ended_ = false;
  epoch_records_ = 0;
  streams_.clear();
  waiting_for_.reset();
  return OkStatus();
}

std::optional<uint64_t> Pipeline::CutFor(uint64_t epoch, uint32_t shard) const {
  auto by_epoch = cuts_.find(epoch);
  if (by_epoch == cuts_.end()) return std::nullopt;
  auto found = by_epoch->second.find(shard);
  if (found == by_epoch->second.end()) return std::nullopt;
  return found->second;
}

std::shared_ptr<Pipeline::Stream> Pipeline::StreamLocked(size_t segment) {
  auto found = streams_.find(segment);
  if (found != streams_.end()) return found->second;
  auto stream = std::make_shared<Stream>();
  stream->epoch = epoch_;
  stream->segment = segment;
  stream->range = plan_[segment];
  if (auto cut = CutFor(epoch_, stream->range.shard)) {
    stream->range.end = std::min(stream->range.end.value_or(*cut), *cut);
  }
  stream->next_record = stream->range.begin;
  streams_.emplace(segment, stream);
  return stream;
}

void Pipeline::AccountLocked(int64_t delta) {
  in_use_ = static_cast<uint64_t>(static_cast<int64_t>(in_use_) + delta);
  AtomicMax(config_.counters->peak_buffered, buffered_bytes_locked());
}

uint64_t Pipeline::held_locked() const {
  // The records' own bytes, or the pool's blocks they and the caller's
  // batches pin, whichever is more (record_pool.h). Readers of local shards
  // read into the pool's blocks (ReaderOptions), one block at a time with no
  // read-ahead (chunk_reader.h): the block each is cutting is I/O, counted
  // in buffered_bytes_locked, so that much is not counted here.
  const RecordPool& pool = *config_.counters->pool;
  const uint64_t live = pool.bytes_live();
  const uint64_t reading = static_cast<uint64_t>(block_readers_.load()) * pool.block_size();
  return std::max(in_use_, live - std::min(live, reading));
}

uint64_t Pipeline::buffered_bytes_locked() const {
  return held_locked() + read_ahead_budget_->in_use() + static_cast<uint64_t>(open_readers_.load()) * 2 * reader_chunk_;
}

uint64_t Pipeline::buffered_bytes() const {
  std::lock_guard lock(mu_);
  return buffered_bytes_locked();
}

void Pipeline::PumpLocked() {
  AssembleLocked();
  AdmitFetchesLocked();
  ready_cv_.notify_all();
}

void Pipeline::AssembleLocked() {
  // Pulls the next record of `segment` into the shuffle buffer if it is here.
  auto pull = [this](size_t segment, ShuffleBuffer<Item>& shuffle) {
    std::shared_ptr<Stream> stream = StreamLocked(segment);
    if (!stream->queue.empty()) {
      stream->queued_bytes -= stream->queue.front().bytes;
      shuffle.Push(std::move(stream->queue.front()));
      stream->queue.pop_front();
      return Pull::kTaken;
    }
    if (stream->ended) {
      if (!stream->error.ok()) {
        error_ = stream->error;
        return Pull::kWait;
      }
      streams_.erase(segment);
      return Pull::kEnded;
    }
    waiting_for_ = segment;
    if (!options_.deterministic) {
      // Sloppy mode: rather than wait, take from any open segment that has
      // records ready (every record is still delivered exactly once).
      schedule_->ActiveInto(&sloppy_window_);
      for (size_t other : sloppy_window_) {
        auto found = streams_.find(other);
        if (found == streams_.end() || found->second->queue.empty()) continue;
        Stream& ready = *found->second;
        ready.queued_bytes -= ready.queue.front().bytes;
        shuffle.Push(std::move(ready.queue.front()));
        ready.queue.pop_front();
        return Pull::kTaken;
      }
    }
    return Pull::kWait;
  };
  while (!closed_ && error_.ok() && !finished_ && ready_.size() < static_cast<size_t>(std::max(options_.prefetch_batches, 1))) {
    waiting_for_.reset();
    Item item;
    Step step = NextInOrder(*schedule_, *shuffle_, input_ended_, pull, &item);
    if (!error_.ok() || step == Step::kWait) break;
    if (step == Step::kRecord) {
      batch_bytes_ += item.bytes;
      batch_.push_back(std::move(item));
      ++epoch_records_;
      if (batch_.size() >= options_.batch_size) EmitBatchLocked();
      continue;
    }
    // The epoch is over for this worker.
    if (!batch_.empty()) {
      if (options_.drop_remainder) {
        AccountLocked(-static_cast<int64_t>(batch_bytes_));
        batch_.clear();
        batch_bytes_ = 0;
      } else {
        EmitBatchLocked();
      }
    }
    const bool last = options_.epochs != 0 ? epoch_ + 1 >= options_.epochs : epoch_records_ == 0;
    if (last) {
      finished_ = true;
      break;
    }
    if (Status status = StartEpochLocked(epoch_ + 1); !status.ok()) error_ = status;
  }
}

void Pipeline::EmitBatchLocked() {
  ReadyBatch ready;
  ready.batch.epoch = epoch_;
  ready.batch.records.reserve(batch_.size());
  for (Item& item : batch_) {
    ready.payload_bytes += item.record.size();
    ready.batch.records.push_back(std::move(item.record));
    if (item.example) ready.batch.examples.push_back(std::move(*item.example));
  }
  ready.bytes = batch_bytes_;
  ready_.push_back(std::move(ready));
  batch_.clear();
  batch_bytes_ = 0;
}

void Pipeline::AdmitFetchesLocked() {
  if (closed_ || finished_ || !error_.ok() || !schedule_) return;
  if (paused_ && consumers_waiting_ == 0) return;
  // Cancelled from outside (the process is exiting, the caller's scope was
  // cancelled): start nothing new, and let Next() say why after the batches
  // already assembled.
  if (cancel_.cancelled()) {
    error_ = CancelledError("the data loader's work was cancelled by its caller");
    return;
  }
  // A member reused from call to call: the assembler runs this for every
  // batch, and the loader makes no allocation per record or batch here.
  std::vector<size_t>& window = window_;
  schedule_->ActiveInto(&window);
  const size_t prefetch_end =
      std::min(plan_.size(), schedule_->opened() + static_cast<size_t>(std::max(options_.prefetch_shards, 0)));
  for (size_t segment = schedule_->opened(); segment < prefetch_end; ++segment) window.push_back(segment);
  const uint64_t chunk = options_.fetch_chunk;
  for (size_t segment : window) {
    std::shared_ptr<Stream> stream = StreamLocked(segment);
    if (stream->fetching || stream->ended || stream->queued_bytes >= 2 * chunk) continue;
    const bool urgent = waiting_for_ == segment && stream->queue.empty();
    // A chunk of room stays free for the stream the assembler waits on, so
    // read-ahead of other shards never starves it.
    const bool fits = held_locked() + chunk + (urgent ? 0 : chunk) <= capacity_;
    if (!fits) {
      // Over budget with nothing else able to free memory (no batch to take,
      // no fetch to finish): let the needed chunk through rather than stall.
      if (!urgent || !ready_.empty() || fetches_in_flight_ > 0) continue;
      config_.counters->budget_overruns.fetch_add(1);
    }
    stream->fetching = true;
    ++fetches_in_flight_;
    AccountLocked(static_cast<int64_t>(chunk));
    // `this` outlives the task: Close() waits for the group.
    CancelScope scope(cancel_.token());
    fetches_.Submit([this, stream, chunk]() mutable {
      RunFetch(std::move(stream), chunk);
      return OkStatus();
    });
  }
}

records::RecordReaderOptions Pipeline::ReaderOptions() const {
  records::RecordReaderOptions reader;
  reader.io.chunk_size = reader_chunk_;
  reader.io.read_ahead = reader_read_ahead_;
  reader.inflate_block_size = reader_chunk_;
  reader.io.executor = &executor_;
  reader.io.budget = read_ahead_budget_.get();
  reader.io.buffers = read_buffers_.get();
  // Local shards are read straight into the pool's blocks, and their records
  // handed out as views of them: no copy (chunk_reader.h).
  reader.io.blocks = config_.counters->pool.get();
  if (options_.bad_shard_policy == BadShardPolicy::kSkip) {
    reader.on_corrupt = records::CorruptPolicy::kSkipRestOfShard;
  }
  return reader;
}

Result<std::unique_ptr<records::RecordReader>> Pipeline::OpenReader(const Segment& range, uint64_t first_record,
                                                                    uint64_t epoch) {
  const ShardInfo& shard = (*config_.shards)[range.shard];
  records::RecordReaderOptions options = ReaderOptions();
  options.io.expected_crc32c = shard.crc32c;  // checked when this worker streams the whole shard
  // The shard is checked against what the manifest or listing said only now,
  // when this worker reads it: see OpenShard.
  Result<std::unique_ptr<records::RecordReader>> opened = NotFoundError("");
  if (config_.cache) {  // the cached copy, when there is one (evicted meanwhile: the store)
    if (std::optional<std::string> local = config_.cache->Acquire(range.shard, epoch, config_.worker)) {
      opened = records::RecordReader::Open(config_.cache->store(), *local, options);
      if (opened.ok()) SPOOL_RETURN_IF_ERROR(CheckOpenedShard(shard, OkStatus(), (*opened)->object_size()));
    }
  }
  if (!opened.ok()) opened = OpenShard(shard, options);
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<records::RecordReader> reader, std::move(opened));
  if (first_record > 0) {
    Status seek = reader->SeekToRecord(first_record);
    if (seek.code() == StatusCode::kOutOfRange) {
      return DataLossError(shard.url + " has fewer than " + std::to_string(first_record) +
                           " records, but its manifest or index says more; rebuild them");
    }
    SPOOL_RETURN_IF_ERROR(seek);
  }
  return reader;
}

Status Pipeline::ParseInto(Item& item, const records::RecordReader& reader) const {
  if (!options_.parse_examples) return OkStatus();
  Result<tensorflow::Example> example = records::ParseExample(item.record.bytes);
  if (!example.ok()) {
    return DataLossError(reader.url() + ": the record at offset " + std::to_string(reader.record_offset()) +
                         " is not a tf.train.Example (" + example.status().message() +
                         "); turn parse_examples off to read raw records");
  }
  item.example = std::move(example).value();
  return OkStatus();
}

Pipeline::FetchResult Pipeline::Fetch(Stream& stream, uint64_t reserved) {
  FetchResult result;
  result.items = std::move(stream.spare_items);  // its capacity, from the last fetch
  result.items.clear();
  // A stream's first fetch hands over its first records after
  // kFirstFetchBytes rather than a whole fetch_chunk: the first batch waits
  // for the first fetch of every stream it draws from.
  uint64_t goal = reserved;
  if (!stream.reader) {
    Result<std::unique_ptr<records::RecordReader>> reader = OpenReader(stream.range, stream.next_record, stream.epoch);
    if (!reader.ok()) {
      result.error = reader.status();
      return result;
    }
    stream.reader = std::move(reader).value();
    ++open_readers_;
    if (stream.reader->reads_into_blocks()) ++block_readers_;
    goal = std::min(reserved, kFirstFetchBytes);
  }
  records::RecordReader& reader = *stream.reader;
  if (!stream.writer) stream.writer.emplace(config_.counters->pool.get());
  BlockWriter& writer = *stream.writer;
  const uint64_t fetched_before = reader.stats().object_bytes;
  while (result.bytes < goal && !stopping_.load(std::memory_order_relaxed)) {
    if (cancel_.cancelled()) {  // a few atomic loads per record; the message only when it happens
      result.error = CancelledError("reading " + reader.url() + ": cancelled");
      break;
    }
    if (stream.range.end && stream.next_record >= *stream.range.end) {
      result.end = true;
      break;
    }
    Item item;
    std::string_view view;
    BlockRef block;
    Result<bool> more = reader.Next(&view, &block, &writer);
    if (!more.ok()) {
      result.error = more.status();
      break;
    }
    if (!*more) {
      result.end = true;
      if (reader.stats().skipped_rest) {
        result.cut_at = stream.next_record;
      } else if (stream.range.end && stream.next_record < *stream.range.end) {
        result.error = DataLossError(reader.url() + " ends after " + std::to_string(stream.next_record) +
                                     " records at offset " + std::to_string(reader.next_offset()) +
                                     ", but its manifest or index says " + std::to_string(*stream.range.end) +
                                     "; the shard was truncated or replaced");
      }
      break;
    }
    // A record within the block its chunk was read into is a view of it, as
    // is one the reader gathered into the writer's block; any other (read
    // from a remote or compressed shard) is copied once, into that block.
    item.record = block ? PooledRecord{std::move(block), view} : writer.Copy(view);
    if (Status parsed = ParseInto(item, reader); !parsed.ok()) {
      result.error = parsed;
      break;
    }
    item.bytes = item.record.size() + kItemOverhead +
                 (item.example ? static_cast<uint64_t>(item.example->SpaceUsedLong()) : 0);
    result.bytes += item.bytes;
    result.items.push_back(std::move(item));
    ++stream.next_record;
  }
  result.object_bytes = reader.stats().object_bytes - fetched_before;
  return result;
}

void Pipeline::RunFetch(std::shared_ptr<Stream> stream, uint64_t reserved) {
  FetchResult result = Fetch(*stream, reserved);
  std::unique_ptr<records::RecordReader> finished_reader;
  {
    std::lock_guard lock(mu_);
    --fetches_in_flight_;
    stream->fetching = false;
    config_.counters->object_bytes.fetch_add(result.object_bytes);
    AccountLocked(static_cast<int64_t>(result.bytes) - static_cast<int64_t>(reserved));
    const bool stale = closed_ || stream->epoch != epoch_ || !streams_.count(stream->segment) ||
                       streams_[stream->segment] != stream;
    if (stale) {
      AccountLocked(-static_cast<int64_t>(result.bytes));
      stream->ended = true;
    } else {
      for (Item& item : result.items) {
        stream->queued_bytes += item.bytes;
        stream->queue.push_back(std::move(item));
      }
      result.items.clear();
      stream->spare_items = std::move(result.items);
      if (!result.error.ok()) {
        if (options_.bad_shard_policy == BadShardPolicy::kSkip && result.error.code() != StatusCode::kCancelled) {
          log::Write(log::Level::kInfo, "loader", "skipping the rest of a bad shard: " + result.error.ToString());
          result.cut_at = stream->next_record;
        } else {
          stream->error = result.error;
        }
        stream->ended = true;
      }
      if (result.cut_at) RecordCutLocked(*stream, *result.cut_at);
      if (result.end) stream->ended = true;
    }
    // A finished stream's partly filled block goes back once its records do.
    if (stream->ended) stream->writer.reset();
    if (stream->ended && stream->reader) {
      finished_reader = std::move(stream->reader);
      --open_readers_;
      if (finished_reader->reads_into_blocks()) --block_readers_;
    }
    PumpLocked();
  }
  // The reader waits for its read-ahead to stop: do that off the lock.
  finished_reader.reset();
}

void Pipeline::RecordCutLocked(Stream& stream, uint64_t cut_at) {
  cuts_[stream.epoch][stream.range.shard] = cut_at;
  config_.counters->skipped_shards.fetch_add(1);
  if (stream.range.end && *stream.range.end > cut_at) {
    config_.counters->skipped_records.fetch_add(*stream.range.end - cut_at);
  }
  stream.range.end = cut_at;
}

Result<uint64_t> Pipeline::SegmentLength(const Segment& segment, uint64_t epoch) {
  std::optional<uint64_t> end = segment.end;
  if (!end) end = (*config_.shards)[segment.shard].records;
  std::optional<uint64_t> cut;
  {
    std::lock_guard lock(mu_);
    cut = CutFor(epoch, segment.shard);
  }
  if (cut) end = std::min(end.value_or(*cut), *cut);
  if (!end) {
    // Unknown count: read the shard once, records undecoded.
    SPOOL_ASSIGN_OR_RETURN(auto reader, OpenReader(segment, 0, epoch));
    uint64_t count = 0;
    std::string_view record;
    while (true) {
      SPOOL_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
      if (!more) break;
      ++count;
    }
    if (reader->stats().skipped_rest) {
      std::lock_guard lock(mu_);
      cuts_[epoch][segment.shard] = count;
    }
    end = count;
  }
  return *end > segment.begin ? *end - segment.begin : 0;
}

Result<std::vector<Pipeline::Item>> Pipeline::Materialize(const std::vector<RecordRef>& refs) {
  std::vector<Item> items(refs.size());
  std::map<uint32_t, std::vector<size_t>> by_segment;  // segment -> positions in refs
  for (size_t i = 0; i < refs.size(); ++i) by_segment[refs[i].segment].push_back(i);
  TaskGroup group(executor_);
  for (auto& [segment, positions] : by_segment) {
    std::sort(positions.begin(), positions.end(),
              [&](size_t a, size_t b) { return refs[a].index < refs[b].index; });
    group.Submit([&, segment = segment, &positions = positions]() -> Status {
      const Segment& range = plan_[segment];
      uint64_t at = refs[positions.front()].index;
      SPOOL_ASSIGN_OR_RETURN(auto reader, OpenReader(range, range.begin + at, epoch_));
      std::string_view dropped;
      BlockWriter writer(config_.counters->pool.get());
      for (size_t position : positions) {
        for (; at < refs[position].index; ++at) {  // between wanted records: read, never decode
          SPOOL_ASSIGN_OR_RETURN(bool more, reader->Next(&dropped));
          if (!more) return DataLossError(reader->url() + " ended early while resuming; the shard changed");
        }
        Item& item = items[position];
        std::string_view view;
        SPOOL_ASSIGN_OR_RETURN(bool more, reader->Next(&view));
        if (!more) return DataLossError(reader->url() + " ended early while resuming; the shard changed");
        item.record = writer.Copy(view);
        ++at;
        SPOOL_RETURN_IF_ERROR(ParseInto(item, *reader));
        item.bytes = item.record.size() + kItemOverhead +
                     (item.example ? static_cast<uint64_t>(item.example->SpaceUsedLong()) : 0);
      }
      return OkStatus();
    });
  }
  SPOOL_RETURN_IF_ERROR(group.Wait());
  return items;
}

Result<std::optional<Batch>> Pipeline::Next() {
  std::unique_lock lock(mu_);
  const auto start = std::chrono::steady_clock::now();
  ++consumers_waiting_;
  if (paused_) AdmitFetchesLocked();  // a paused loader still serves what is asked for
  ready_cv_.wait(lock, [&] { return closed_ || !ready_.empty() || finished_ || !error_.ok(); });
  --consumers_waiting_;
  config_.counters->wait_nanos.fetch_add(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()));
  if (closed_) return CancelledError("the data loader was closed");
  if (ready_.empty()) {
    if (!error_.ok()) return error_;
    return std::optional<Batch>();
  }
  ReadyBatch ready = std::move(ready_.front());
  ready_.pop_front();
  AccountLocked(-static_cast<int64_t>(ready.bytes));
  if (ready.batch.epoch != state_epoch_) {
    state_epoch_ = ready.batch.epoch;
    state_position_ = 0;
  }
  state_position_ += ready.batch.records.size();
  config_.counters->records.fetch_add(ready.batch.records.size());
  config_.counters->bytes.fetch_add(ready.payload_bytes);
  PumpLocked();
  return std::optional<Batch>(std::move(ready.batch));
}

LoaderState Pipeline::State() const {
  std::lock_guard lock(mu_);
  LoaderState state;
  state.seed = options_.seed;
  state.epoch = state_epoch_;
  state.position = state_position_;
  state.worker = config_.worker;
  state.workers = config_.workers;
  if (auto cuts = cuts_.find(state_epoch_); cuts != cuts_.end()) {
    for (const auto& [shard, records] : cuts->second) state.truncated.push_back({shard, records});
  }
  return state;
}

void Pipeline::SetPaused(bool paused) {
  std::lock_guard lock(mu_);
  const bool resumed = paused_ && !paused;
  paused_ = paused;
  if (resumed && schedule_) PumpLocked();
}

void Pipeline::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    stopping_ = true;
    ready_cv_.notify_all();
  }
  cancel_.Cancel();
  // No fetch is admitted once closed_ is set; wait for those in flight.
  fetches_.Wait().IgnoreError();
  // Then close the shard readers, which wait for their own read-ahead.
  std::map<size_t, std::shared_ptr<Stream>> streams;
  {
    std::lock_guard lock(mu_);
    streams.swap(streams_);
    for (auto& [segment, stream] : streams) {
      if (stream->reader) {
        --open_readers_;
        if (stream->reader->reads_into_blocks()) --block_readers_;
      }
    }
  }
}

}  // namespace spool::loader
