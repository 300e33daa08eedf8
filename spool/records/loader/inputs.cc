#include "spool/records/loader/inputs.h"

#include <algorithm>
#include <set>
#include <span>

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

ShardInfo ToShardInfo(const Location& where, records::DatasetShard shard) {
  return ShardInfo{where.store->Describe(shard.key), where.store, std::move(shard.key), shard.records, shard.size,
                   std::move(shard.index_key), shard.crc32c};
}

// A missing or changed shard of a manifest fails now, not an hour into
// training: every shard is checked with Stat, in parallel.
Status CheckManifestShards(std::span<ShardInfo> shards, const std::string& input, Executor& executor) {
  TaskGroup group(executor);
  for (ShardInfo& shard : shards) {
    group.Submit([&shard, &input]() -> Status {
      Result<ObjectInfo> info = shard.store->Stat(shard.key);
      if (!info.ok()) {
        if (info.status().code() == StatusCode::kNotFound) {
          return NotFoundError("shard " + shard.url + " named in dataset manifest " + input +
                               " does not exist; restore it or rewrite the dataset");
        }
        return info.status().WithContext("shard " + shard.url + " of dataset manifest " + input);
      }
      if (info->size != *shard.size) {
        return DataLossError("shard " + shard.url + " is " + std::to_string(info->size) +
                             " bytes but dataset manifest " + input + " says " + std::to_string(*shard.size) +
                             "; the shard changed after the manifest was written");
      }
      return OkStatus();
    });
  }
  return group.Wait();
}

}  // namespace

Result<std::vector<ShardInfo>> ResolveInputs(const DataLoaderOptions& options, Executor& executor) {
  if (options.inputs.empty()) return InvalidArgumentError("the loader has no inputs; give shard URLs, a glob or a manifest");
  std::vector<ShardInfo> shards;
  for (const std::string& input : options.inputs) {
    SPOOL_ASSIGN_OR_RETURN(Location where, Locate(options, input));
    SPOOL_ASSIGN_OR_RETURN(records::ExpandedInput expanded, records::ExpandInput(*where.store, where.key));
    const size_t first = shards.size();
    for (records::DatasetShard& shard : expanded.shards) shards.push_back(ToShardInfo(where, std::move(shard)));
    if (expanded.manifest) {
      SPOOL_RETURN_IF_ERROR(CheckManifestShards(std::span(shards).subspan(first), input, executor));
    }
  }
  std::set<std::string> seen;
  std::erase_if(shards, [&](const ShardInfo& shard) { return !seen.insert(shard.url).second; });
  if (shards.size() > UINT32_MAX) return InvalidArgumentError("more than 2^32 shards");
  return shards;
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
      SPOOL_ASSIGN_OR_RETURN(auto reader, records::RecordReader::Open(*shard.store, shard.key, options));
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
