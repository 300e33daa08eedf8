#include "cli/convert/dataset_output.h"

#include "spool/records/example.h"

namespace spool::cli {

Result<std::unique_ptr<DatasetOutput>> DatasetOutput::Open(ObjectStore& store, std::string prefix,
                                                           const records::ShardedWriterOptions& options,
                                                           std::optional<TaskSlice> task) {
  std::unique_ptr<DatasetOutput> output(new DatasetOutput());
  if (!task) {
    SPOOL_ASSIGN_OR_RETURN(output->sharded_, records::ShardedWriter::Open(store, std::move(prefix), options));
    return output;
  }
  if (options.num_shards <= 0) return InvalidArgumentError("--task-index/--task-count need a fixed --shards N");
  if (task->count <= 0 || task->index < 0 || task->index >= task->count) {
    return InvalidArgumentError("--task-index must be in [0, --task-count), got " + std::to_string(task->index) +
                                " of " + std::to_string(task->count));
  }
  output->num_shards_ = options.num_shards;
  output->task_ = *task;
  records::RecordWriterOptions writer_options;
  writer_options.compression = options.compression;
  writer_options.compression_level = options.compression_level;
  writer_options.write_index = options.write_index;
  writer_options.append_size = 256 << 10;  // many shards are open at once
  for (int shard = task->index; shard < options.num_shards; shard += task->count) {
    std::string key = records::ShardedWriter::ShardKey(prefix, shard, options.num_shards, options.suffix,
                                                       options.compression, options.prefix_fanout);
    SPOOL_ASSIGN_OR_RETURN(auto writer, records::RecordWriter::Open(store, key, writer_options));
    output->task_writers_.push_back(std::move(writer));
  }
  return output;
}

DatasetOutput::~DatasetOutput() {
  if (sharded_) sharded_->Abort();
  for (auto& writer : task_writers_) writer->Abort();
}

bool DatasetOutput::Wants(uint64_t position) const {
  if (sharded_) return true;
  return static_cast<int>(position % num_shards_) % task_.count == task_.index;
}

Status DatasetOutput::Write(uint64_t position, const tensorflow::Example& example) {
  if (sharded_) {
    return sharded_->WriteExample(example);
  }
  int shard = static_cast<int>(position % num_shards_);
  return task_writers_[shard / task_.count]->Write(records::SerializeExample(example));
}

Result<std::optional<records::DatasetManifest>> DatasetOutput::Close() {
  if (sharded_) {
    Result<records::DatasetManifest> manifest = sharded_->Close();
    sharded_.reset();
    SPOOL_RETURN_IF_ERROR(manifest.status());
    return std::optional<records::DatasetManifest>(std::move(manifest).value());
  }
  for (auto& writer : task_writers_) SPOOL_RETURN_IF_ERROR(writer->Close().status());
  task_writers_.clear();
  return std::optional<records::DatasetManifest>();
}

}  // namespace spool::cli
