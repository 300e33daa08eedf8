// Datasets as users name them: what a glob matches, which keys in a listing
// are shards, and how one input (a shard, a glob, a dataset manifest, a
// dataset prefix) expands to a list of shards. The data loader and every
// `spool` command go through here, so an input means the same thing in
// training code and on the command line.
//
// Glob grammar (on the key inside the bucket; gsutil / s5cmd style):
//   *        any run of characters within one path segment (never '/')
//   ?        one character other than '/'
//   [a-z0]   one character (never '/') in the class; [!...] or [^...] negates
//   **       any run of characters, '/' included (crosses folders)
// Every other character matches itself; there is no escape character.
//
// Sidecar files: a listing's keys that are never data shards, whatever a
// glob or prefix says:
//   - hidden files: a base name starting with '.' (temporary files of
//     downloads in progress, ".<name>.spool-tmp-*", editors' and tools' files);
//   - DALI index files "<shard>.idx" (record_index.h);
//   - dataset manifests "*.manifest.json" (manifest.h).
//
// Thread-safety: the functions are stateless; ExpandInput makes blocking
// store requests on the caller's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/manifest.pb.h"

namespace spool::records {

// True when `text` holds a wildcard ('*', '?' or '[').
bool HasWildcard(std::string_view text);

// Whether `key` matches `pattern` in the grammar above (whole key).
bool GlobMatch(std::string_view pattern, std::string_view key);

// Whether `key` ends in ".manifest.json".
bool IsManifestKey(std::string_view key);

// Whether `key` is a sidecar file (see above), never a shard.
bool IsSidecarKey(std::string_view key);

// One shard of an expanded input, with what the expansion learnt about it.
struct DatasetShard {
  std::string key;
  std::optional<uint64_t> records;  // from a manifest
  std::optional<uint64_t> size;     // from a manifest or a listing
  std::string index_key;            // DALI index known to exist (manifest or listing); else empty
  std::optional<uint32_t> crc32c;   // of the stored bytes, from a manifest that records it
};

struct ExpandedInput {
  std::vector<DatasetShard> shards;  // manifest order, else key order
  // Set when the shards came from a manifest (same order as shards).
  std::optional<spool::records::DatasetManifest> manifest;
  std::string manifest_key;
};

// What a key without wildcards (and not a manifest) names.
enum class PlainKey {
  // One shard, taken as given: no request (the reader reports it missing).
  kShard,
  // An object that exists is one shard; else the dataset "<key>.manifest.json"
  // when it exists; else every shard whose key starts with `key` (a dataset
  // prefix, or a folder when `key` is empty or ends in '/').
  kShardOrDataset,
};

// Expands one input to its shards:
//   - a key ending in ".manifest.json": the manifest's shards (ReadManifest),
//     without listing;
//   - a key with a wildcard: one listing under the part before the first
//     wildcard, keeping the non-sidecar keys that GlobMatch the key, each
//     with the "<shard>.idx" seen in the listing;
//   - any other key: as `plain` says.
// NotFound (naming the URL and the grammar) when nothing matches; store
// errors as the store returns them.
Result<ExpandedInput> ExpandInput(ObjectStore& store, std::string_view key, PlainKey plain = PlainKey::kShard);

}  // namespace spool::records
