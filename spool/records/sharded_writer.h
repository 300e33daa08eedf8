// ShardedWriter: writes a dataset as TFRecord shards under a prefix, then
// its manifest.
//
// Layouts:
//   - a fixed shard count (num_shards > 0): "prefix-00003-of-00016.tfrecord",
//     records dealt round robin, or by a stable hash of a key (FNV-1a 64,
//     so a key always lands in the same shard);
//   - rolled shards (num_shards == 0): "prefix-00003.tfrecord", a new shard
//     when the current one reaches max_shard_records records or
//     max_shard_bytes bytes of framed (uncompressed) records.
// Compressed shards get ".gz" / ".zlib" after the suffix.
//
// Prefix fan-out (prefix_fanout = N > 1): shard i goes one folder deeper,
// into one of N folders named by a hex label ("data/train/3f/train-00017-of-
// 01024.tfrecord"), so that readers and writers spread their requests over N
// key prefixes (S3 serves 5,500 GETs and 3,500 PUTs per second per prefix).
// The label is spool::FanoutLabel(i, N) (spool/core/key_fanout.h): shard i
// uses bucket i % N, so consecutive shards (read at the same time) land on
// different prefixes and each prefix holds the same number of shards (+-1). The manifest lists each shard's name with
// its folder; readers open the dataset from the manifest as before.
//
// Shards are written in parallel on the executor: Write() gathers records
// into per-shard batches and hands each full batch to a task that frames,
// compresses and uploads it (in order per shard); rolled shards are closed in
// the background while the next one fills. Memory: at most two batches per
// open shard plus each shard's upload buffer.
//
// Atomicity: each shard becomes visible only when complete (WritableObject
// semantics); the manifest "<prefix>.manifest.json" is written last, after
// every shard (and index) is committed, so a dataset with a manifest is
// complete. On an error or Abort() no manifest is written and the shards
// already committed are deleted (best effort).
//
// Not thread-safe: one thread calls Write/Close.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/executor.h"
#include "spool/core/status.h"
#include "spool/core/stealable_task.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/compression.h"
#include "spool/records/example.h"
#include "spool/records/manifest.h"
#include "spool/records/record_writer.h"

namespace spool::records {

enum class ShardAssignment {
  kRoundRobin,  // record i goes to shard i % num_shards
  kKeyHash,     // Write(key, record): shard FNV-1a-64(key) % num_shards
};

struct ShardedWriterOptions {
  int num_shards = 0;  // > 0: that many shards; 0: rolled shards
  ShardAssignment assignment = ShardAssignment::kRoundRobin;
  uint64_t max_shard_records = 0;  // rolled: records per shard (0: no limit)
  uint64_t max_shard_bytes = 0;    // rolled: framed record bytes per shard (0: no limit)
  Compression compression = Compression::kNone;
  int compression_level = Deflater::kDefaultLevel;
  std::string suffix = ".tfrecord";
  // > 1: spread the shards over this many key prefixes (see above); 0 or 1:
  // every shard beside the manifest. At most spool::kMaxPrefixFanout.
  int prefix_fanout = 0;
  bool write_index = false;   // DALI index beside each shard (NONE only)
  bool write_manifest = true;
  // The Examples' schema for the manifest; when unset, WriteExample()
  // records the features it sees.
  std::optional<spool::records::Schema> schema;
  size_t batch_bytes = 1 << 20;  // records handed to a shard's task at once
  Executor* executor = nullptr;  // default: DefaultExecutor()
};

class ShardedWriter {
 public:
  static Result<std::unique_ptr<ShardedWriter>> Open(ObjectStore& store, std::string prefix,
                                                     const ShardedWriterOptions& options = {});
  ~ShardedWriter();  // aborts unless closed

  // Round robin or rolled. (With kKeyHash, use the keyed overload.)
  Status Write(std::string_view record);
  // By key hash (kKeyHash only).
  Status Write(std::string_view key, std::string_view record);
  Status WriteExample(const tensorflow::Example& example);
  Status WriteExample(std::string_view key, const tensorflow::Example& example);

  // Closes every shard, then writes the manifest; returns it.
  Result<spool::records::DatasetManifest> Close();
  void Abort();

  // "train-00003-of-00016.tfrecord.gz" / "train-00003.tfrecord" for the
  // prefix ".../train"; with prefix_fanout > 1, ".../train/<label>/train-
  // 00003-of-00016.tfrecord.gz" where <label> is spool::FanoutLabel(index,
  // prefix_fanout).
  static std::string ShardKey(std::string_view prefix, int index, int count, std::string_view suffix,
                              Compression compression, int prefix_fanout = 0);

 private:
  struct Shard;
  ShardedWriter(ObjectStore& store, std::string prefix, const ShardedWriterOptions& options);
  Status WriteTo(Shard& shard, std::string_view record);
  Result<Shard*> CurrentRolledShard(uint64_t framed_size);
  Result<std::unique_ptr<Shard>> NewShard(int index, int count);
  Status Dispatch(Shard& shard);
  void CloseInBackground(Shard& shard);
  Status Fail(Status status);

  ObjectStore& store_;
  std::string prefix_;
  ShardedWriterOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
  uint64_t next_round_robin_ = 0;
  ManifestBuilder manifest_;  // shards are added at Close
  bool closed_ = false;
};

}  // namespace spool::records
