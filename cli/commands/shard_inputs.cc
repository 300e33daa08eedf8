#include "cli/commands/shard_inputs.h"

#include <fnmatch.h>

#include "cli/commands/locations.h"
#include "spool/records/manifest.h"

namespace spool::cli {
namespace {

constexpr std::string_view kManifestSuffix = ".manifest.json";

Result<ShardSet> FromManifest(std::shared_ptr<ObjectStore> store, std::string manifest_key) {
  ShardSet set;
  SPOOL_ASSIGN_OR_RETURN(records::DatasetManifest manifest, records::ReadManifest(*store, manifest_key));
  set.keys = records::ShardKeys(manifest_key, manifest);
  set.manifest = std::move(manifest);
  set.manifest_key = std::move(manifest_key);
  set.store = std::move(store);
  return set;
}

// Every shard under `list_prefix` whose key passes `keep`.
Result<std::vector<std::string>> ListShards(ObjectStore& store, std::string list_prefix,
                                            const std::function<bool(const std::string&)>& keep) {
  std::vector<std::string> keys;
  ListOptions list;
  list.prefix = std::move(list_prefix);
  SPOOL_RETURN_IF_ERROR(ForEachPage(store, list, [&](const ListPage& page) {
    for (const ObjectInfo& info : page.objects) {
      if (!IsShardSidecar(info.key) && keep(info.key)) keys.push_back(info.key);
    }
    return OkStatus();
  }));
  return keys;
}

}  // namespace

bool IsShardSidecar(std::string_view key) {
  return key.ends_with(".idx") || key.ends_with(kManifestSuffix) || BaseName(key).starts_with(".");
}

Result<ShardSet> ResolveShards(std::string_view url, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(url, global));
  ObjectStore& store = *location.store;
  const std::string& key = location.key;
  if (key.ends_with(kManifestSuffix)) return FromManifest(location.store, key);

  ShardSet set;
  set.store = location.store;
  size_t glob = key.find_first_of("*?[");
  if (glob != std::string::npos) {
    std::string pattern = key;
    SPOOL_ASSIGN_OR_RETURN(set.keys, ListShards(store, key.substr(0, glob), [&pattern](const std::string& candidate) {
                             return ::fnmatch(pattern.c_str(), candidate.c_str(), 0) == 0;
                           }));
    if (set.keys.empty()) return NotFoundError("no shard matches " + location.url.ToString());
    return set;
  }
  if (!key.empty() && !key.ends_with('/')) {
    Result<ObjectInfo> info = store.Stat(key);
    if (info.ok()) {
      set.keys.push_back(key);
      return set;
    }
    if (info.status().code() != StatusCode::kNotFound) return info.status();
    std::string manifest_key = records::ManifestKeyFor(key);
    Result<ObjectInfo> manifest = store.Stat(manifest_key);
    if (manifest.ok()) return FromManifest(location.store, manifest_key);
    if (manifest.status().code() != StatusCode::kNotFound) return manifest.status();
  }
  SPOOL_ASSIGN_OR_RETURN(set.keys, ListShards(store, key, [](const std::string&) { return true; }));
  if (set.keys.empty()) {
    return NotFoundError(location.url.ToString() + ": no shard, manifest or dataset prefix of that name");
  }
  return set;
}

}  // namespace spool::cli
