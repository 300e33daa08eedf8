#include "spool/records/loader/data_loader.h"

#include <algorithm>
#include <utility>

#include "spool/core/bytes.h"
#include "spool/records/loader/fingerprint.h"
#include "spool/records/loader/partitions.h"
#include "spool/records/loader/pipeline.h"
#include "spool/records/loader/plan.h"
#include "spool/records/loader/shard_cache.h"

namespace spool::loader {
namespace {

Status CheckOptions(const DataLoaderOptions& options) {
  auto bad = [](std::string what) { return InvalidArgumentError("data loader option " + what); };
  if (options.partitions == 0 && options.batch_size == 0) return bad("batch_size must be at least 1");
  if (options.partitions > 0 &&
      (options.global_batch_size == 0 || options.global_batch_size % options.partitions != 0)) {
    return bad("global_batch_size must be a positive multiple of partitions (" + std::to_string(options.partitions) +
               ") in elastic mode");
  }
  if (options.interleave < 1) return bad("interleave must be at least 1");
  if (options.interleave_block < 1) return bad("interleave_block must be at least 1");
  if (options.prefetch_batches < 1) return bad("prefetch_batches must be at least 1");
  if (options.prefetch_shards < 0) return bad("prefetch_shards must not be negative");
  if (options.fetch_chunk == 0) return bad("fetch_chunk must be at least 1 byte");
  if (options.epochs != 0 && options.start_epoch >= options.epochs) {
    return bad("start_epoch (" + std::to_string(options.start_epoch) + ") must be less than epochs (" +
               std::to_string(options.epochs) + "): start at an earlier epoch or raise epochs");
  }
  if (!options.deterministic && options.start_position > 0) {
    // The position is found by replaying the fixed order, which the
    // records delivered with deterministic = false did not follow.
    return bad("start_position needs deterministic mode: set deterministic = true, or open at position 0");
  }
  if (options.local_workers < 1 || options.local_worker < 0 || options.local_worker >= options.local_workers) {
    return bad("local_worker must be in [0, local_workers)");
  }
  return OkStatus();
}

std::shared_ptr<RecordPool> MakeRecordPool(const DataLoaderOptions& options) {
  // Blocks of a quarter of a fetch (64 KiB to 1 MiB): small enough that the
  // partly filled block of each open shard and a shuffle buffer's stragglers
  // pin little, large enough for many small records. Idle blocks may fill
  // the budget: the loader's reads are bounded by it (pinned blocks count),
  // so the pool never holds more than the most that was live, and in steady
  // state every block is a reused one (no new pages, no allocation).
  const size_t block = static_cast<size_t>(std::clamp<uint64_t>(options.fetch_chunk / 4, 64 << 10, 1 << 20));
  return std::make_shared<RecordPool>(block, std::max<uint64_t>(options.memory_budget, 4 * block));
}

}  // namespace

DataLoader::DataLoader(DataLoaderOptions options, WorkerIdentity worker, std::shared_ptr<std::vector<ShardInfo>> shards,
                       std::string fingerprint)
    : options_(std::move(options)),
      worker_(std::move(worker)),
      shards_(std::move(shards)),
      fingerprint_(std::move(fingerprint)),
      counters_(std::make_shared<CounterBlock>()) {
  // A pool whose blocks the caller still holds in quantity (records of the
  // last epoch kept) is not reused: this loader would count them against
  // its budget and read one fetch at a time.
  const bool reuse = options_.record_pool && options_.record_pool->bytes_live() <= options_.memory_budget / 4;
  counters_->pool = reuse ? options_.record_pool : MakeRecordPool(options_);
  counters_->record_blocks_at_open = counters_->pool->stats().blocks_made;
}

DataLoader::~DataLoader() { Close(); }

Result<std::unique_ptr<DataLoader>> DataLoader::Open(DataLoaderOptions options) {
  SPOOL_RETURN_IF_ERROR(CheckOptions(options));
  Executor& executor = options.executor ? *options.executor : DefaultExecutor();
  SPOOL_ASSIGN_OR_RETURN(WorkerIdentity worker, ResolveWorker(options.rank, options.world_size, CurrentEnv()));
  // The loader's requests: with URL inputs, stores of its own that count
  // into its own counters (stores opened with other counters are never
  // shared with it); with a caller's store, that store's counters.
  const bool owns_requests = !options.store && !options.store_options.counters;
  if (owns_requests) options.store_options.counters = std::make_shared<RequestCounters>();
  std::shared_ptr<RequestCounters> requests =
      options.store ? options.store->shared_counters() : options.store_options.counters;
  const RequestCounts requests_at_open = requests->Snapshot();
  SPOOL_ASSIGN_OR_RETURN(std::vector<ShardInfo> shards, ResolveInputs(options));
  std::string fingerprint = loader::InputsFingerprint(shards);
  // Record counts let the plan balance workers by records. Index files give
  // them cheaply; reading every shard is paid only when it must be: fewer
  // shards than workers, or elastic mode, whose plan is in records.
  const uint64_t workers = static_cast<uint64_t>(worker.world_size) * options.local_workers;
  if (options.partitions > 0 && options.partitions % workers != 0) {
    return InvalidArgumentError("data loader option partitions (" + std::to_string(options.partitions) +
                                ") must be a multiple of the job's workers (" + std::to_string(workers) +
                                " = world size " + std::to_string(worker.world_size) + " x local_workers " +
                                std::to_string(options.local_workers) + ")");
  }
  const bool all_known = std::all_of(shards.begin(), shards.end(), [](const auto& s) { return s.records.has_value(); });
  const bool indexed = std::all_of(shards.begin(), shards.end(),
                                   [](const auto& s) { return s.records || !s.index_key.empty(); });
  if (!all_known && (indexed || shards.size() < workers || options.count_records || options.partitions > 0)) {
    SPOOL_RETURN_IF_ERROR(LoadCounts(shards, executor, options.bad_shard_policy == BadShardPolicy::kSkip));
  }
  std::unique_ptr<DataLoader> loader(new DataLoader(
      std::move(options), worker, std::make_shared<std::vector<ShardInfo>>(std::move(shards)), std::move(fingerprint)));
  loader->counters_->requests = std::move(requests);
  loader->counters_->requests_at_open = requests_at_open;
  loader->counters_->owns_requests = owns_requests;
  SPOOL_RETURN_IF_ERROR(loader->OpenCache());
  loader->RegisterMetrics();
  LoaderState start;
  start.seed = loader->options_.seed;
  start.worker = loader->worker_index();
  start.workers = workers;
  start.partitions = loader->options_.partitions;
  start.epoch = loader->options_.start_epoch;
  start.position = loader->options_.start_position;
  SPOOL_RETURN_IF_ERROR(loader->Start(start));
  return loader;
}

Result<std::string> DataLoader::InputsFingerprint(const DataLoaderOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(std::vector<ShardInfo> shards, ResolveInputs(options));
  return loader::InputsFingerprint(shards);
}

Status DataLoader::OpenCache() {
  const Env env = CurrentEnv();
  SPOOL_ASSIGN_OR_RETURN(ShardCacheOptions cache, ResolveShardCacheOptions(options_.cache_dir, options_.cache_limit));
  if (cache.dir.empty()) return OkStatus();
  cache.policy = options_.cache_policy;
  cache.fetch_ahead = options_.cache_fetch_ahead;
  // "This node": the local ranks torchrun names (LOCAL_RANK of
  // LOCAL_WORLD_SIZE consecutive ranks), else this rank alone; each with its
  // local_workers. In elastic mode the plan's identities are the partitions
  // those workers own.
  uint64_t first_rank = static_cast<uint64_t>(worker_.rank);
  uint64_t ranks = 1;
  const std::optional<std::string> local_rank = env.Get("LOCAL_RANK");
  const std::optional<std::string> local_world = env.Get("LOCAL_WORLD_SIZE");
  if (local_rank && local_world) {
    char* end = nullptr;
    const uint64_t lr = std::strtoull(local_rank->c_str(), &end, 10);
    const uint64_t lw = std::strtoull(local_world->c_str(), &end, 10);
    if (lw > 0 && lr < lw && lr <= first_rank) {
      first_rank -= lr;
      ranks = std::min<uint64_t>(lw, static_cast<uint64_t>(worker_.world_size) - first_rank);
    }
  }
  CacheSchedule::Config schedule;
  for (const ShardInfo& shard : *shards_) schedule.counts.push_back(shard.records);
  schedule.seed = options_.seed;
  schedule.shuffle_shards = options_.shuffle_shards;
  schedule.epochs = options_.epochs;
  const uint64_t per_rank = static_cast<uint64_t>(options_.local_workers);
  const uint64_t owned = options_.partitions > 0 ? options_.partitions / workers() : 1;
  schedule.workers = options_.partitions > 0 ? options_.partitions : workers();
  for (uint64_t w = first_rank * per_rank * owned; w < (first_rank + ranks) * per_rank * owned; ++w) {
    schedule.node_workers.push_back(w);
  }
  cache_ =
      std::make_shared<ShardCache>(std::move(cache), shards_, std::make_shared<CacheSchedule>(std::move(schedule)));
  return OkStatus();
}

uint64_t DataLoader::workers() const {
  return static_cast<uint64_t>(worker_.world_size) * options_.local_workers;
}

std::optional<uint64_t> DataLoader::EpochRecords(uint64_t epoch, uint64_t worker) const {
  std::vector<std::optional<uint64_t>> counts;
  counts.reserve(shards_->size());
  uint64_t total = 0;
  for (const ShardInfo& shard : *shards_) {
    if (!shard.records) return std::nullopt;
    counts.push_back(shard.records);
    total += *shard.records;
  }
  if (partitions_) {  // the worker's partitions, each cut to the epoch's steps
    const uint64_t partitions = options_.partitions;
    const uint64_t owned = partitions / workers();
    const uint64_t per_partition = partitions_->steps_per_epoch() * (options_.global_batch_size / partitions);
    uint64_t records = 0;
    for (uint64_t p = worker * owned; p < (worker + 1) * owned; ++p) {
      const uint64_t length = RecordCut(total, p + 1, partitions) - RecordCut(total, p, partitions);
      records += std::min(length, per_partition);
    }
    return records;
  }
  Result<std::vector<Segment>> plan =
      PlanWorkerEpoch(counts, options_.seed, epoch, options_.shuffle_shards, worker, workers());
  if (!plan.ok()) return std::nullopt;
  uint64_t records = 0;
  for (const Segment& segment : *plan) {
    records += segment.end.value_or(*counts[segment.shard]) - segment.begin;
  }
  return records;
}

uint64_t DataLoader::worker_index() const {
  return static_cast<uint64_t>(worker_.rank) * options_.local_workers + options_.local_worker;
}

namespace {

Status ClosedError() {
  return FailedPreconditionError("the data loader is closed; open a new one to resume from a state");
}

}  // namespace

Status DataLoader::Start(const LoaderState& state) {
  if (options_.partitions > 0) {
    PartitionSet::Config config;
    config.options = options_;
    config.worker = worker_index();
    config.workers = workers();
    config.shards = shards_;
    config.counters = counters_;
    config.cache = cache_;
    SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<PartitionSet> started,
                           PartitionSet::Start(std::move(config), state, paused_));
    std::unique_ptr<PartitionSet> replaced;
    {
      std::lock_guard lock(swap_mu_);
      if (closed_) {
        started->Close();
        return ClosedError();
      }
      replaced = std::exchange(partitions_, std::move(started));
    }
    if (replaced) replaced->Close();
    return OkStatus();
  }
  Pipeline::Config config;
  config.options = options_;
  config.worker = state.worker;
  config.workers = state.workers;
  config.shards = shards_;
  config.counters = counters_;
  config.cache = cache_;
  auto pipeline = std::make_shared<Pipeline>(std::move(config));
  pipeline->SetPaused(paused_);  // a Resume keeps the pause
  Status started = pipeline->Start(state);
  if (!started.ok()) {
    pipeline->Close();
    return started;
  }
  std::shared_ptr<Pipeline> replaced;
  {
    std::lock_guard lock(swap_mu_);
    if (closed_) {
      pipeline->Close();
      return ClosedError();
    }
    replaced = std::exchange(pipeline_, std::move(pipeline));
  }
  if (replaced) replaced->Close();
  return OkStatus();
}

Result<std::optional<Batch>> DataLoader::Next() {
  const auto started = std::chrono::steady_clock::now();
  Result<std::optional<Batch>> batch = partitions_ ? partitions_->Next() : pipeline_->Next();
  counters_->next_wait.Add(std::chrono::steady_clock::now() - started);
  return batch;
}

LoaderState DataLoader::State() const {
  LoaderState state = partitions_ ? partitions_->State() : pipeline_->State();
  state.fingerprint = fingerprint_;
  return state;
}

Status DataLoader::Resume(const LoaderState& state) {
  {
    std::lock_guard lock(swap_mu_);
    if (closed_) return ClosedError();
  }
  if (!options_.deterministic) {
    return FailedPreconditionError("Resume needs deterministic mode: with deterministic = false the record "
                                   "order depends on timing and cannot be replayed");
  }
  if (!state.fingerprint.empty() && state.fingerprint != fingerprint_) {
    return InvalidArgumentError("loader state was taken on other inputs (their fingerprint is " + state.fingerprint +
                                ", this loader's inputs have " + fingerprint_ +
                                "); resume it on the dataset it was saved with");
  }
  const LoaderState here = State();
  if (options_.partitions > 0) {  // any world size: the partitions fix the order
    if (state.partitions != options_.partitions) {
      return InvalidArgumentError("loader state has " + std::to_string(state.partitions) +
                                  " partitions but this loader " + std::to_string(options_.partitions) +
                                  "; resume with the partitions and global_batch_size it was saved with");
    }
    LoaderState mine = state;
    mine.worker = here.worker;
    mine.workers = here.workers;
    return Start(mine);
  }
  if (state.partitions != 0) {
    return InvalidArgumentError("loader state was saved in elastic mode (" + std::to_string(state.partitions) +
                                " partitions); open the loader with the same partitions and global_batch_size");
  }
  if (state.seed != here.seed || state.worker != here.worker || state.workers != here.workers) {
    return InvalidArgumentError("loader state (seed " + std::to_string(state.seed) + ", worker " +
                                std::to_string(state.worker) + " of " + std::to_string(state.workers) +
                                ") does not belong to this loader (seed " + std::to_string(here.seed) +
                                ", worker " + std::to_string(here.worker) + " of " +
                                std::to_string(here.workers) + "); resume with the same seed and job shape");
  }
  return Start(state);
}

void DataLoader::PausePrefetch(bool paused) {
  paused_ = paused;
  if (partitions_) partitions_->SetPaused(paused);
  if (pipeline_) pipeline_->SetPaused(paused);
}

void DataLoader::Close() {
  // Under swap_mu_, so a Resume racing this Close either finishes its swap
  // first (and its pipeline is closed here) or sees closed_ and starts none.
  std::lock_guard lock(swap_mu_);
  closed_ = true;
  if (partitions_) partitions_->Close();
  if (pipeline_) pipeline_->Close();
  if (cache_) cache_->Close();
}

LoaderCounters DataLoader::Counters() const {
  const CounterBlock& c = *counters_;
  LoaderCounters out;
  out.records = c.records.load();
  out.bytes = c.bytes.load();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.opened).count();
  if (out.seconds > 0) {
    out.records_per_second = static_cast<double>(out.records) / out.seconds;
    out.bytes_per_second = static_cast<double>(out.bytes) / out.seconds;
  }
  out.wait_seconds = static_cast<double>(c.wait_nanos.load()) / 1e9;
  out.object_bytes = c.object_bytes.load();
  const RequestCounts requests = c.requests->Snapshot();
  out.retries = requests.retries - c.requests_at_open.retries;
  out.throttles = requests.throttles - c.requests_at_open.throttles;
  out.skipped_records = c.skipped_records.load();
  out.skipped_shards = c.skipped_shards.load();
  {
    std::lock_guard lock(swap_mu_);  // a Resume on the consumer thread may be replacing them
    out.buffered_bytes = partitions_ ? partitions_->buffered_bytes() : pipeline_ ? pipeline_->buffered_bytes() : 0;
    out.read_buffers_made = partitions_ ? partitions_->read_buffers_made()
                            : pipeline_ ? pipeline_->read_buffers_made()
                                        : 0;
  }
  out.peak_buffered_bytes = c.peak_buffered.load();
  out.budget_overruns = c.budget_overruns.load();
  out.memory_budget = options_.memory_budget;
  out.next_wait = c.next_wait.Snapshot();
  if (cache_) {
    const ShardCacheCounts cache = cache_->Counts();
    out.cache_hits = cache.hits;
    out.cache_misses = cache.misses;
    out.cache_fetched_bytes = cache.fetched_bytes;
    out.cache_evicted_bytes = cache.evicted_bytes;
    out.cache_fetch_ahead = cache.fetch_ahead;
  }
  const RecordPoolStats pool = c.pool->stats();
  out.record_blocks_made = pool.blocks_made - c.record_blocks_at_open;
  out.record_bytes_live = pool.bytes_live;
  out.record_bytes_idle = pool.bytes_idle;
  return out;
}

std::shared_ptr<RecordPool> DataLoader::record_pool() const { return counters_->pool; }

RequestCounts DataLoader::Requests() const { return counters_->requests->Snapshot(); }

void DataLoader::RegisterMetrics() {
  metrics_ = metrics::MetricsRegistry::Global().Add([this](metrics::MetricsWriter& writer) {
    const LoaderCounters c = Counters();
    const metrics::Labels none;
    auto counter = [&](const char* name, const char* help, double value) { writer.Counter(name, help, none, value); };
    counter("spool_loader_records_total", "records delivered by Next()", static_cast<double>(c.records));
    counter("spool_loader_bytes_total", "record payload bytes delivered", static_cast<double>(c.bytes));
    counter("spool_loader_read_bytes_total", "bytes read from the store (compressed, if so)",
            static_cast<double>(c.object_bytes));
    counter("spool_loader_input_wait_seconds_total", "time Next() waited for data: the input-bound figure",
            c.wait_seconds);
    counter("spool_loader_budget_overruns_total", "fetches let past a full memory budget to avoid a stall",
            static_cast<double>(c.budget_overruns));
    counter("spool_loader_skipped_shards_total", "shards cut short under BadShardPolicy::kSkip",
            static_cast<double>(c.skipped_shards));
    counter("spool_loader_skipped_records_total", "known records lost to skipped shards",
            static_cast<double>(c.skipped_records));
    writer.Gauge("spool_loader_buffered_bytes", "bytes held now: records, batches, read-ahead", none,
                 static_cast<double>(c.buffered_bytes));
    writer.Gauge("spool_loader_memory_budget_bytes", "the memory budget the buffered bytes stay within", none,
                 static_cast<double>(c.memory_budget));
    writer.Histogram("spool_loader_next_seconds", "how long each Next() call took (waiting for data, mostly)", none,
                     c.next_wait);
    if (cache_) {
      counter("spool_loader_cache_hits_total", "shards read from the local shard cache",
              static_cast<double>(c.cache_hits));
      counter("spool_loader_cache_misses_total", "shards not in the local shard cache when asked for",
              static_cast<double>(c.cache_misses));
      counter("spool_loader_cache_fetched_bytes_total", "bytes fetched from the store into the shard cache",
              static_cast<double>(c.cache_fetched_bytes));
      counter("spool_loader_cache_evicted_bytes_total", "bytes removed from the shard cache to make room",
              static_cast<double>(c.cache_evicted_bytes));
      writer.Gauge("spool_loader_cache_fetch_ahead", "shards queued or being fetched into the cache ahead of use", none,
                   static_cast<double>(c.cache_fetch_ahead));
    }
    if (counters_->owns_requests) metrics::WriteRequestMetrics(writer, Requests(), {{"owner", "loader"}});
  });
}

}  // namespace spool::loader
