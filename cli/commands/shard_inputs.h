// What `spool records` reads: the shards a URL names, expanded by
// records::ExpandInput (spool/records/dataset.h) with PlainKey::kShardOrDataset.
// A URL may be
//   - a dataset manifest ("...train.manifest.json"),
//   - one shard (an object that exists),
//   - a glob of shards ("s3://b/ds/train-*"; '*', '?' and [...] stay within
//     one folder, '**' crosses folders),
//   - a dataset prefix ("s3://b/ds/train": its manifest when there is one,
//     else every shard whose key starts with it) or a folder ("s3://b/ds/").
// Index files (".idx"), manifests and hidden files are never taken as shards.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/global_options.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/manifest.pb.h"

namespace spool::cli {

struct ShardSet {
  std::shared_ptr<ObjectStore> store;
  std::vector<std::string> keys;  // in order
  // Set when the shards came from a manifest (same order as keys).
  std::optional<records::DatasetManifest> manifest;
  std::string manifest_key;
};

// NotFound when the URL names nothing (and says what was looked for).
Result<ShardSet> ResolveShards(std::string_view url, const GlobalOptions& global);

}  // namespace spool::cli
