#include "spool/records/loader/partitions.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "spool/records/loader/plan.h"

namespace spool::loader {

PartitionSet::PartitionSet(Config config) : config_(std::move(config)) {
  const DataLoaderOptions& options = config_.options;
  partition_batch_ = options.global_batch_size / options.partitions;
  uint64_t total = 0;
  for (const ShardInfo& shard : *config_.shards) total += shard.records.value_or(0);
  // Partition lengths are floor(T/C) or ceil(T/C) (plan.h's cut), the same
  // every epoch: the step count needs nothing but the total.
  const uint64_t shortest = total / options.partitions;
  const uint64_t longest = shortest + (total % options.partitions != 0 ? 1 : 0);
  steps_per_epoch_ = options.drop_remainder ? shortest / partition_batch_
                                            : (longest + partition_batch_ - 1) / partition_batch_;
}

PartitionSet::~PartitionSet() { Close(); }

Result<std::unique_ptr<PartitionSet>> PartitionSet::Start(Config config, const LoaderState& state, bool paused) {
  const DataLoaderOptions& options = config.options;
  const uint64_t partitions = options.partitions;
  if (state.seed != options.seed || state.partitions != partitions) {
    return InvalidArgumentError("loader state (seed " + std::to_string(state.seed) + ", " +
                                std::to_string(state.partitions) + " partitions) does not belong to this loader (seed " +
                                std::to_string(options.seed) + ", " + std::to_string(partitions) +
                                " partitions); resume with the same seed and partitions");
  }
  std::unique_ptr<PartitionSet> set(new PartitionSet(std::move(config)));
  const Config& c = set->config_;
  if (state.position % set->partition_batch_ != 0) {
    return InvalidArgumentError("loader state position " + std::to_string(state.position) +
                                " is not a whole number of partition batches of " +
                                std::to_string(set->partition_batch_) + " records; was it saved in elastic mode?");
  }
  set->epoch_ = state.epoch;
  set->step_ = state.position / set->partition_batch_;
  uint64_t total = 0;
  for (const ShardInfo& shard : *c.shards) total += shard.records.value_or(0);
  const uint64_t owned = partitions / c.workers;
  for (uint64_t p = c.worker * owned; p < (c.worker + 1) * owned; ++p) {
    Pipeline::Config pipeline;
    pipeline.options = c.options;
    pipeline.options.partitions = 0;
    pipeline.options.batch_size = set->partition_batch_;
    pipeline.options.memory_budget = c.options.memory_budget / owned;  // the worker's budget holds
    pipeline.worker = p;
    pipeline.workers = partitions;
    pipeline.shards = c.shards;
    pipeline.counters = c.counters;
    pipeline.cache = c.cache;
    auto started = std::make_shared<Pipeline>(std::move(pipeline));
    started->SetPaused(paused);
    LoaderState at = state;
    at.worker = p;
    at.workers = partitions;
    at.partitions = 0;
    const uint64_t length = RecordCut(total, p + 1, partitions) - RecordCut(total, p, partitions);
    at.position = std::min(state.position, length);
    set->partitions_.push_back(Partition{started, std::nullopt, false});
    SPOOL_RETURN_IF_ERROR(started->Start(at).WithContext("partition " + std::to_string(p)));
  }
  return set;
}

Status PartitionSet::Peek(Partition& partition) {
  if (partition.peeked || partition.done) return OkStatus();
  SPOOL_ASSIGN_OR_RETURN(std::optional<Batch> batch, partition.pipeline->Next());
  if (batch) {
    partition.peeked = std::move(batch);
  } else {
    partition.done = true;
  }
  return OkStatus();
}

Result<std::optional<Batch>> PartitionSet::Next() {
  const uint64_t epochs = config_.options.epochs;
  while (true) {
    if (epochs != 0 && epoch_ >= epochs) return std::optional<Batch>();
    if (step_ < steps_per_epoch_) break;
    // The epoch's steps are over: what a partition still holds of it is the
    // remainder drop_remainder drops.
    for (Partition& partition : partitions_) {
      while (true) {
        SPOOL_RETURN_IF_ERROR(Peek(partition));
        if (!partition.peeked || partition.peeked->epoch != epoch_) break;
        config_.counters->records.fetch_sub(partition.peeked->records.size());
        partition.peeked.reset();
      }
    }
    ++epoch_;
    step_ = 0;
  }
  Batch out;
  out.epoch = epoch_;
  out.records.reserve(partition_batch_ * partitions_.size());
  for (Partition& partition : partitions_) {
    SPOOL_RETURN_IF_ERROR(Peek(partition));
    if (!partition.peeked || partition.peeked->epoch != epoch_) continue;  // this partition's epoch is over
    Batch& batch = *partition.peeked;
    out.records.Append(std::move(batch.records));
    std::move(batch.examples.begin(), batch.examples.end(), std::back_inserter(out.examples));
    partition.peeked.reset();
  }
  ++step_;
  return std::optional<Batch>(std::move(out));
}

LoaderState PartitionSet::State() const {
  LoaderState state;
  state.seed = config_.options.seed;
  state.epoch = epoch_;
  state.position = step_ * partition_batch_;
  state.worker = config_.worker;
  state.workers = config_.workers;
  state.partitions = config_.options.partitions;
  for (const Partition& partition : partitions_) {
    LoaderState own = partition.pipeline->State();
    if (own.epoch != epoch_) continue;
    state.truncated.insert(state.truncated.end(), own.truncated.begin(), own.truncated.end());
  }
  std::sort(state.truncated.begin(), state.truncated.end(),
            [](const auto& a, const auto& b) { return a.shard < b.shard; });
  state.truncated.erase(std::unique(state.truncated.begin(), state.truncated.end()), state.truncated.end());
  return state;
}

void PartitionSet::SetPaused(bool paused) {
  for (Partition& partition : partitions_) partition.pipeline->SetPaused(paused);
}

void PartitionSet::Close() {
  for (Partition& partition : partitions_) partition.pipeline->Close();
}

uint64_t PartitionSet::buffered_bytes() const {
  uint64_t bytes = 0;
  for (const Partition& partition : partitions_) bytes += partition.pipeline->buffered_bytes();
  return bytes;
}

uint64_t PartitionSet::read_buffers_made() const {
  uint64_t made = 0;
  for (const Partition& partition : partitions_) made += partition.pipeline->read_buffers_made();
  return made;
}

}  // namespace spool::loader
