// Elastic mode (internal; DataLoaderOptions::partitions): one worker's share
// of a job whose order is fixed by C partitions rather than by its workers.
//
// The epoch's records are cut into C partitions exactly as a job of C
// workers would cut them (plan.h); partition p is read by a Pipeline that
// believes it is worker p of C, with batches of b = global_batch_size / C
// records. Worker w of W (W divides C) owns partitions [w*C/W, (w+1)*C/W)
// and its batch at step s joins the s-th batch of each, in partition order.
// The job's global batch at step s -- the workers' batches in worker order --
// is the s-th batch of every partition, in partition order, whatever W is.
//
// Steps: every worker takes the same number of steps per epoch, computed
// from the record total alone: ceil(ceil(T/C) / b), or floor(floor(T/C) / b)
// with drop_remainder (a partition's batches past that count are dropped).
// Without drop_remainder a worker whose partitions are shorter by one record
// may return an empty batch at an epoch's last step, so that all workers
// step together.
//
// State: (epoch, s * b); a resume at any W dividing C starts partition p at
// min(s * b, its length), so the epoch's remaining records are delivered
// exactly once over the new workers.
//
// Threading and lifetime as Pipeline: Next/State from one consumer thread;
// Close from any thread waits for every partition's tasks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "spool/core/status.h"
#include "spool/records/loader/pipeline.h"

namespace spool::loader {

class PartitionSet {
 public:
  struct Config {
    DataLoaderOptions options;  // partitions and global_batch_size set
    uint64_t worker = 0;
    uint64_t workers = 1;
    std::shared_ptr<const std::vector<ShardInfo>> shards;  // every record count known
    std::shared_ptr<CounterBlock> counters;
    std::shared_ptr<ShardCache> cache;  // may be null
  };

  // Starts this worker's partitions at `state` (its `position` is per
  // partition, a multiple of the partition batch). InvalidArgument for a
  // state of another seed or partition count.
  static Result<std::unique_ptr<PartitionSet>> Start(Config config, const LoaderState& state, bool paused);
  ~PartitionSet();  // Close()

  Result<std::optional<Batch>> Next();
  LoaderState State() const;
  void SetPaused(bool paused);
  void Close();
  uint64_t buffered_bytes() const;
  uint64_t read_buffers_made() const;

  // Steps every worker takes in each epoch (see above).
  uint64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  struct Partition {
    std::shared_ptr<Pipeline> pipeline;
    std::optional<Batch> peeked;  // taken from the pipeline, not yet delivered
    bool done = false;            // the pipeline delivered its last epoch
  };
  explicit PartitionSet(Config config);
  // Makes sure `partition.peeked` holds its next batch unless it is done.
  Status Peek(Partition& partition);

  const Config config_;
  uint64_t partition_batch_ = 1;
  uint64_t steps_per_epoch_ = 0;
  std::vector<Partition> partitions_;  // the owned ones, in partition order
  uint64_t epoch_ = 0;
  uint64_t step_ = 0;  // steps delivered in epoch_
};

}  // namespace spool::loader
