// Where `spool convert` writes: a whole dataset through the sharded writer
// (shards, index files, then the manifest), or, with --task-index and
// --task-count, only this task's shards of a fixed-count layout.
//
// Record i of the input goes to shard i % shards in both cases, so the
// shards of N tasks together are byte for byte those of one run; task t
// writes the shards s with s % task_count == t (every one of them, empty or
// not) and no manifest: `spool records manifest` writes it once all tasks
// are done. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spool/core/storage/object_store.h"
#include "spool/records/record_writer.h"
#include "spool/records/sharded_writer.h"

namespace spool::cli {

struct TaskSlice {
  int index = 0;
  int count = 1;
};

class DatasetOutput {
 public:
  static Result<std::unique_ptr<DatasetOutput>> Open(ObjectStore& store, std::string prefix,
                                                     const records::ShardedWriterOptions& options,
                                                     std::optional<TaskSlice> task);
  ~DatasetOutput();

  // Whether record `position` (0-based, counting good records) is this task's.
  bool Wants(uint64_t position) const;
  // Writes record `position`, which Wants().
  Status Write(uint64_t position, const tensorflow::Example& example);
  // Commits everything; the manifest, when one is written.
  Result<std::optional<records::DatasetManifest>> Close();

 private:
  DatasetOutput() = default;

  std::unique_ptr<records::ShardedWriter> sharded_;  // whole dataset
  // Task mode: the writers of shards s % count == index, in shard order.
  std::vector<std::unique_ptr<records::RecordWriter>> task_writers_;
  int num_shards_ = 0;
  TaskSlice task_;
};

}  // namespace spool::cli
