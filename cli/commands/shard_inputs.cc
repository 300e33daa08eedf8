#include "cli/commands/shard_inputs.h"

#include "cli/commands/locations.h"
#include "spool/records/dataset.h"

namespace spool::cli {

Result<ShardSet> ResolveShards(std::string_view url, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(url, global));
  SPOOL_ASSIGN_OR_RETURN(records::ExpandedInput expanded,
                         records::ExpandInput(*location.store, location.key, records::PlainKey::kShardOrDataset));
  ShardSet set;
  set.store = std::move(location.store);
  set.keys.reserve(expanded.shards.size());
  for (records::DatasetShard& shard : expanded.shards) set.keys.push_back(std::move(shard.key));
  set.manifest = std::move(expanded.manifest);
  set.manifest_key = std::move(expanded.manifest_key);
  return set;
}

}  // namespace spool::cli
