#include "spool/records/loader/inputs.h"

#include <algorithm>
#include <set>

#include "spool/core/storage/explained_reads.h"
#include "spool/core/storage/registry.h"
#include "spool/core/url.h"
#include "spool/records/dataset.h"
#include "spool/records/record_index.h"
#include "spool/records/record_reader.h"

namespace spool::loader {
namespace {

// Where one input lives: its store, the key inside it, and how to name it.
struct Location {
  std::shared_ptr<ObjectStore> store;
  std::string key;
};

Result<Location> Locate(const DataLoaderOptions& options, const std::string& input) {
  if (options.store) return Location{options.store, input};
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, OpenLocation(input, options.store_options));
  return Location{std::move(location.store), std::move(location.key)};
}

ShardInfo ToShardInfo(const Location& where, records::DatasetShard shard, const std::string& manifest) {
  return ShardInfo{where.store->Describe(shard.key),
                   where.store,
                   std::move(shard.key),
                   shard.records,
                   shard.size,
                   std::move(shard.index_key),
                   shard.crc32c,
                   manifest,
                   /*version=*/""};
}

// A shard its manifest names but its store does not have.
Status ExplainMissingShard(const ShardInfo& shard, const Status& status) {
  if (status.code() != StatusCode::kNotFound || shard.manifest.empty()) return status;
  return NotFoundError("shard " + shard.url + " named in dataset manifest " + shard.manifest +
                       " does not exist; restore it or rewrite the dataset");
}

// What a read of a shard opened from the size its manifest or listing gave
// (OpenShard) failed with, in the terms CheckOpenedShard uses at an open:
// the store says it is gone or changed only when it is read.
Status ExplainShardRead(const ShardInfo& shard, const Status& read) {
  if (!IsChangedSinceOpened(read)) return ExplainMissingShard(shard, read);
  const std::string known = shard.manifest.empty() ? "the loader listed it"
                                                   : "dataset manifest " + shard.manifest + " was written (it says " +
                                                         std::to_string(shard.size.value_or(0)) + " bytes)";
  return DataLossError("shard " + shard.url + " changed after " + known + ": " + read.message());
}

}  // namespace

Result<std::vector<ShardInfo>> ResolveInputs(const DataLoaderOptions& options) {
  if (options.inputs.empty()) return InvalidArgumentError("the loader has no inputs; give shard URLs, a glob or a manifest");
  std::vector<ShardInfo> shards;
  for (const std::string& input : options.inputs) {
    SPOOL_ASSIGN_OR_RETURN(Location where, Locate(options, input));
    SPOOL_ASSIGN_OR_RETURN(records::ExpandedInput expanded, records::ExpandInput(*where.store, where.key));
    const std::string manifest = expanded.manifest ? where.store->Describe(expanded.manifest_key) : std::string();
    for (records::DatasetShard& shard : expanded.shards) {
      shards.push_back(ToShardInfo(where, std::move(shard), manifest));
    }
  }
  std::set<std::string> seen;
  std::erase_if(shards, [&](const ShardInfo& shard) { return !seen.insert(shard.url).second; });
  if (shards.size() > UINT32_MAX) return InvalidArgumentError("more than 2^32 shards");
  return shards;
}

Status CheckOpenedShard(const ShardInfo& shard, const Status& opened, uint64_t opened_size) {
  if (!opened.ok()) return ExplainMissingShard(shard, opened);
  if (!shard.size || opened_size == *shard.size) return OkStatus();
  const std::string known = shard.manifest.empty() ? "was " + std::to_string(*shard.size) + " bytes when listed"
                                                   : "dataset manifest " + shard.manifest + " says " +
                                                         std::to_string(*shard.size);
  return DataLossError("shard " + shard.url + " is " + std::to_string(opened_size) + " bytes but " + known +
                       "; the shard changed after " + (shard.manifest.empty() ? "the loader listed it" : "the manifest was written"));
}

ObjectInfo KnownObjectOf(const ShardInfo& shard) {
  ObjectInfo known;
  known.key = shard.key;
  known.size = shard.size.value_or(0);
  known.version = shard.version;
  return known;
}

Result<std::unique_ptr<records::RecordReader>> OpenShard(const ShardInfo& shard,
                                                         const records::RecordReaderOptions& options) {
  if (!shard.size) {
    Result<std::unique_ptr<records::RecordReader>> opened =
        records::RecordReader::Open(*shard.store, shard.key, options);
    SPOOL_RETURN_IF_ERROR(CheckOpenedShard(shard, opened.status(), opened.ok() ? (*opened)->object_size() : 0));
    return opened;
  }
  Result<std::unique_ptr<ReadableObject>> opened = shard.store->OpenListed(KnownObjectOf(shard));
  // Stores that open with a request of their own (OpenRead) report here.
  SPOOL_RETURN_IF_ERROR(CheckOpenedShard(shard, opened.status(), opened.ok() ? (*opened)->info().size : 0));
  auto object = std::make_shared<ExplainedReads>(std::move(opened).value(),
                                                 [shard](const Status& read) { return ExplainShardRead(shard, read); });
  return records::RecordReader::Open(std::move(object), *shard.store, shard.key, options);
}

Status LoadCounts(std::vector<ShardInfo>& shards, Executor& executor, bool skip_damage) {
  TaskGroup group(executor);
  for (ShardInfo& shard : shards) {
    if (shard.records) continue;
    group.Submit([&shard, skip_damage]() -> Status {
      if (!shard.index_key.empty()) {
        Result<records::RecordIndex> index = records::RecordIndex::Load(*shard.store, shard.index_key, shard.size);
        if (index.ok()) {
          shard.records = index->size();
          return OkStatus();
        }
      }
      records::RecordReaderOptions options;
      if (skip_damage) options.on_corrupt = records::CorruptPolicy::kSkipRestOfShard;
      SPOOL_ASSIGN_OR_RETURN(auto reader, OpenShard(shard, options));
      uint64_t count = 0;
      std::string_view record;
      while (true) {
        SPOOL_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
        if (!more) break;
        ++count;
      }
      shard.records = count;
      return OkStatus();
    });
  }
  return group.Wait();
}

}  // namespace spool::loader
