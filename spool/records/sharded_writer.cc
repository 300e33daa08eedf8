#include "spool/records/sharded_writer.h"

#include <cstdio>

#include "spool/core/cancel.h"
#include "spool/core/key_fanout.h"
#include "spool/records/framing.h"
#include "spool/records/json_view.h"
#include "spool/records/manifest.h"

namespace spool::records {
namespace {

uint64_t Fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// Records waiting for a shard's task: payloads back to back, and their sizes.
struct Batch {
  std::string data;
  std::vector<size_t> sizes;
};

}  // namespace

struct ShardedWriter::Shard {
  std::string key;
  std::unique_ptr<RecordWriter> writer;
  Batch pending;                               // filled by the caller's thread
  std::shared_ptr<StealableTask> batch_task;   // the batch being written
  std::shared_ptr<StealableTask> close_task;   // set once the shard is closing
  uint64_t records = 0;                        // counted at Write, for rolling
  uint64_t framed_bytes = 0;
  std::optional<WrittenFile> written;          // set by the close task
};

std::string ShardedWriter::ShardKey(std::string_view prefix, int index, int count, std::string_view suffix,
                                    Compression compression, int prefix_fanout) {
  std::string folder;
  if (prefix_fanout > 1) {
    // ".../train" -> ".../train/<label>/train": the shard's name is unchanged.
    const size_t slash = prefix.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? prefix : prefix.substr(slash + 1);
    folder = std::string(prefix) + "/" + FanoutLabel(static_cast<uint64_t>(index), prefix_fanout) + "/";
    prefix = name;
  }
  char number[32];
  if (count > 0) {
    std::snprintf(number, sizeof(number), "-%05d-of-%05d", index, count);
  } else {
    std::snprintf(number, sizeof(number), "-%05d", index);
  }
  return folder + std::string(prefix) + number + std::string(suffix) + std::string(CompressionExtension(compression));
}

ShardedWriter::ShardedWriter(ObjectStore& store, std::string prefix, const ShardedWriterOptions& options)
    : store_(store),
      prefix_(std::move(prefix)),
      options_(options),
      manifest_(ManifestKeyFor(prefix_), options.compression) {
  if (options_.schema) manifest_.SetSchema(*options_.schema);
  if (options_.executor == nullptr) options_.executor = &DefaultExecutor();
  options_.batch_bytes = std::max<size_t>(options_.batch_bytes, 1);
}

ShardedWriter::~ShardedWriter() { Abort(); }

Result<std::unique_ptr<ShardedWriter>> ShardedWriter::Open(ObjectStore& store, std::string prefix,
                                                           const ShardedWriterOptions& options) {
  if (prefix.empty() || prefix.back() == '/') {
    return InvalidArgumentError("dataset prefix '" + prefix + "' must end in a name (e.g. 'data/train')");
  }
  if (options.num_shards < 0 || options.num_shards > 99999) {
    return InvalidArgumentError("num_shards must be 0 (rolled shards) or 1..99999, not " +
                                std::to_string(options.num_shards));
  }
  if (options.prefix_fanout < 0 || options.prefix_fanout > spool::kMaxPrefixFanout) {
    return InvalidArgumentError("prefix_fanout must be 0 (no fan-out) or 1.." +
                                std::to_string(spool::kMaxPrefixFanout) + ", not " +
                                std::to_string(options.prefix_fanout));
  }
  if (options.assignment == ShardAssignment::kKeyHash && options.num_shards == 0) {
    return InvalidArgumentError("key-hash assignment needs a fixed num_shards");
  }
  if (options.write_index && options.compression != Compression::kNone) {
    return InvalidArgumentError("index files describe uncompressed shards only; drop write_index or the compression");
  }
  if (options.compression == Compression::kNone && options.compression_level != Deflater::kDefaultLevel) {
    return InvalidArgumentError("a compression level needs GZIP or ZLIB shards; drop the level or set the compression");
  }
  std::unique_ptr<ShardedWriter> writer(new ShardedWriter(store, std::move(prefix), options));
  for (int i = 0; i < options.num_shards; ++i) {
    SPOOL_ASSIGN_OR_RETURN(auto shard, writer->NewShard(i, options.num_shards));
    writer->shards_.push_back(std::move(shard));
  }
  return writer;
}

Result<std::unique_ptr<ShardedWriter::Shard>> ShardedWriter::NewShard(int index, int count) {
  auto shard = std::make_unique<Shard>();
  shard->key = ShardKey(prefix_, index, count, options_.suffix, options_.compression, options_.prefix_fanout);
  RecordWriterOptions writer_options;
  writer_options.compression = options_.compression;
  writer_options.compression_level = options_.compression_level;
  writer_options.write_index = options_.write_index;
  SPOOL_ASSIGN_OR_RETURN(shard->writer, RecordWriter::Open(store_, shard->key, writer_options));
  return shard;
}

Status ShardedWriter::Dispatch(Shard& shard) {
  // One batch in flight per shard keeps its records in order and bounds memory.
  if (shard.batch_task) {
    Status status = shard.batch_task->Wait();
    shard.batch_task = nullptr;
    SPOOL_RETURN_IF_ERROR(status);
  }
  if (shard.pending.sizes.empty()) return OkStatus();
  auto batch = std::make_shared<Batch>(std::move(shard.pending));
  shard.pending = Batch();
  shard.pending.data.reserve(options_.batch_bytes);
  RecordWriter* writer = shard.writer.get();
  shard.batch_task = StealableTask::Submit(options_.executor, [writer, batch]() -> Status {
    size_t position = 0;
    for (size_t size : batch->sizes) {
      SPOOL_RETURN_IF_ERROR(writer->Write(std::string_view(batch->data.data() + position, size)));
      position += size;
    }
    return OkStatus();
  });
  return OkStatus();
}

void ShardedWriter::CloseInBackground(Shard& shard) {
  // The close runs after the shard's last batch; a failed batch fails it.
  std::shared_ptr<StealableTask> last_batch = shard.batch_task;
  Shard* target = &shard;
  shard.close_task = StealableTask::Submit(options_.executor, [target, last_batch]() -> Status {
    if (last_batch) SPOOL_RETURN_IF_ERROR(last_batch->Wait());
    SPOOL_ASSIGN_OR_RETURN(WrittenFile file, target->writer->Close());
    target->written = std::move(file);
    return OkStatus();
  });
}

Status ShardedWriter::Fail(Status status) {
  Abort();
  return status;
}

Status ShardedWriter::WriteTo(Shard& shard, std::string_view record) {
  shard.pending.data.append(record);
  shard.pending.sizes.push_back(record.size());
  ++shard.records;
  shard.framed_bytes += record.size() + kFramingSize;
  if (shard.pending.data.size() >= options_.batch_bytes) {
    if (Status status = Dispatch(shard); !status.ok()) return Fail(std::move(status));
  }
  return OkStatus();
}

Result<ShardedWriter::Shard*> ShardedWriter::CurrentRolledShard(uint64_t framed_size) {
  Shard* current = shards_.empty() ? nullptr : shards_.back().get();
  const bool full =
      current != nullptr && current->records > 0 &&
      ((options_.max_shard_records != 0 && current->records >= options_.max_shard_records) ||
       (options_.max_shard_bytes != 0 && current->framed_bytes + framed_size > options_.max_shard_bytes));
  if (current != nullptr && !full) return current;
  if (current != nullptr) {
    SPOOL_RETURN_IF_ERROR(Dispatch(*current));
    CloseInBackground(*current);
  }
  SPOOL_ASSIGN_OR_RETURN(auto shard, NewShard(static_cast<int>(shards_.size()), 0));
  shards_.push_back(std::move(shard));
  return shards_.back().get();
}

Status ShardedWriter::Write(std::string_view record) {
  if (closed_) return FailedPreconditionError("cannot write to dataset " + store_.Describe(prefix_) + ": closed");
  if (options_.num_shards == 0) {
    auto shard = CurrentRolledShard(record.size() + kFramingSize);
    if (!shard.ok()) return Fail(shard.status());
    return WriteTo(**shard, record);
  }
  if (options_.assignment == ShardAssignment::kKeyHash) {
    return InvalidArgumentError("this dataset deals records by key hash: call Write(key, record)");
  }
  Shard& shard = *shards_[next_round_robin_++ % shards_.size()];
  return WriteTo(shard, record);
}

Status ShardedWriter::Write(std::string_view key, std::string_view record) {
  if (closed_) return FailedPreconditionError("cannot write to dataset " + store_.Describe(prefix_) + ": closed");
  if (options_.assignment != ShardAssignment::kKeyHash) {
    return InvalidArgumentError("this dataset is not dealt by key hash: call Write(record), or set kKeyHash");
  }
  return WriteTo(*shards_[Fnv1a64(key) % shards_.size()], record);
}

Status ShardedWriter::WriteExample(const tensorflow::Example& example) {
  manifest_.NoteExample(example);
  return Write(SerializeExample(example));
}

Status ShardedWriter::WriteExample(std::string_view key, const tensorflow::Example& example) {
  manifest_.NoteExample(example);
  return Write(key, SerializeExample(example));
}

Result<DatasetManifest> ShardedWriter::Close() {
  if (closed_) return FailedPreconditionError("dataset " + store_.Describe(prefix_) + " is already closed");
  for (auto& shard : shards_) {
    if (shard->close_task) continue;  // a rolled shard already closing
    if (Status status = Dispatch(*shard); !status.ok()) return Fail(std::move(status));
    CloseInBackground(*shard);
  }
  Status first_error;
  for (auto& shard : shards_) {
    Status status = shard->close_task->Wait();
    if (!status.ok() && first_error.ok()) first_error = std::move(status);
  }
  if (!first_error.ok()) return Fail(std::move(first_error));

  for (auto& shard : shards_) {
    const WrittenFile& file = *shard->written;
    if (Status added = manifest_.AddShard(file.key, file.records, file.bytes, file.crc32c, file.index_key);
        !added.ok()) {
      return Fail(std::move(added));
    }
  }
  const DatasetManifest manifest = manifest_.Build();
  if (options_.write_manifest) {
    auto json = ManifestToJson(manifest);
    if (!json.ok()) return Fail(json.status());
    auto written = WriteAll(store_, manifest_.manifest_key(), *json);
    if (!written.ok()) return Fail(written.status().WithContext("writing the manifest of " + store_.Describe(prefix_)));
  }
  closed_ = true;
  return manifest;
}

void ShardedWriter::Abort() {
  if (closed_) return;
  closed_ = true;
  for (auto& shard : shards_) {
    if (shard->close_task) shard->close_task->Cancel().IgnoreError();
    if (shard->batch_task) shard->batch_task->Cancel().IgnoreError();
  }
  // Removing what was committed must happen even when the caller's work was
  // cancelled (that is often why we are here).
  CancelScope cleanup(CancelToken::Process());
  for (auto& shard : shards_) {
    if (shard->written) {
      // Committed already: remove it, so no part of a failed dataset stays.
      store_.Delete(shard->key).IgnoreError();
      if (!shard->written->index_key.empty()) store_.Delete(shard->written->index_key).IgnoreError();
    } else if (shard->writer) {
      shard->writer->Abort();
    }
  }
}

}  // namespace spool::records
