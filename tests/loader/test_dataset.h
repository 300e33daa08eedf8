// Test datasets for the loader tests: shards of uneven sizes written with
// the records writer into any store, with their expected records.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spool/core/storage/object_store.h"
#include "spool/records/compression.h"
#include "spool/records/loader/data_loader.h"

namespace spool::testing {

struct DatasetSpec {
  std::string prefix;                   // key prefix, e.g. "run1/train"
  std::vector<uint64_t> shard_records;  // records per shard (uneven on purpose)
  uint64_t record_bytes = 64;           // payload size (at least 32)
  records::Compression compression = records::Compression::kNone;
  bool write_index = false;
  bool write_manifest = false;
};

struct Dataset {
  std::vector<std::string> shard_keys;
  std::string manifest_key;          // set when a manifest was written
  std::vector<std::string> records;  // every payload, each unique
  std::string glob;                  // a glob matching exactly the shards
};

// "s<shard>-r<record>-" padded to record_bytes with bytes derived from both.
std::string RecordPayload(uint64_t shard, uint64_t record, uint64_t bytes);

Result<Dataset> WriteDataset(ObjectStore& store, const DatasetSpec& spec);

// Every record a loader delivers, in order, until the end (or `max_batches`).
// Each batch's records are appended; `states` (when given) gets State()
// after each batch.
Status Drain(loader::DataLoader& loader, std::vector<std::string>* records,
             std::vector<spool::loader::LoaderState>* states = nullptr,
             std::optional<size_t> max_batches = std::nullopt);

// Rewrites `key` with byte `offset` flipped, or cut to `new_size` bytes.
Status FlipByte(ObjectStore& store, const std::string& key, uint64_t offset);
Status Truncate(ObjectStore& store, const std::string& key, uint64_t new_size);

}  // namespace spool::testing
