// From the user's inputs (URLs, globs, dataset manifests) to the list of
// shards a DataLoader reads, with what is known about each.
//
// Each input is expanded by records::ExpandInput (spool/records/dataset.h),
// which owns the glob grammar and the rule for sidecar files:
// - A URL names one shard.
// - A glob ('*' and '?' within one path segment, '**' across segments,
//   '[abc]' classes) lists the store under the part before the first
//   wildcard and keeps the matching keys (index files "*.idx", manifests and
//   hidden files never match as shards). No match is NotFound.
// - A key ending in ".manifest.json" is a dataset manifest: its shards (names
//   relative to the manifest's folder) with their record counts and sizes;
//   no listing. Shards are not checked when the loader opens: a worker
//   touches only the shards it reads, when it reads them (see OpenShard),
//   so opening costs O(inputs) requests per worker, not O(shards)
//   (docs/loader.md has the arithmetic for 1,000 workers).
// Record counts come from the manifest, else from a "<shard>.idx" index file
// seen in a glob's listing (loaded only when needed, see LoadCounts). A
// manifest's CRC32C of each shard is checked while the shard streams
// (records::ReadAheadOptions::expected_crc32c) whenever a worker reads it
// whole from its first byte.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/executor.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/loader/options.h"
#include "spool/records/record_reader.h"

namespace spool::loader {

struct ShardInfo {
  std::string url;  // for messages
  std::shared_ptr<ObjectStore> store;
  std::string key;
  std::optional<uint64_t> records;  // known record count
  std::optional<uint64_t> size;     // object size, when known
  std::string index_key;            // DALI index beside the shard, when known to exist
  std::optional<uint32_t> crc32c;   // of the stored bytes, from the manifest: checked when read whole
  std::string manifest;             // URL of the dataset manifest that named it, if any (for messages)
  // The object version the caller pinned (the map dataset's index), if any:
  // part of a cached copy's identity, and a fetch of another version is
  // abandoned (the store read then reports the change).
  std::string version;
};

// Resolves every input, in order, dropping repeated shards. Reads each
// manifest or lists each glob; never stats a manifest's shards.
Result<std::vector<ShardInfo>> ResolveInputs(const DataLoaderOptions& options);

// What the open of `shard` by a reader said, checked against what the loader
// knew before: a missing shard is NotFound and a size other than the known
// one is DataLoss, both naming the shard and its manifest (or the listing).
// `opened` is the open's status and, when it succeeded, the object's size.
Status CheckOpenedShard(const ShardInfo& shard, const Status& opened, uint64_t opened_size);

// What the loader knows of `shard` (key, size, pinned version) as the
// ObjectInfo that ObjectStore::OpenListed opens. Needs shard.size.
ObjectInfo KnownObjectOf(const ShardInfo& shard);

// Opens `shard` to read its records with `options`. A shard whose size its
// manifest or listing gave is opened from that (ObjectStore::OpenListed):
// on S3 a shard of at most one part is then read with one GET and no HEAD,
// half the requests on a prefix the server throttles (docs/performance.md).
// Such a shard is checked when it is read rather than when opened, and its
// store's "gone" (NotFound) and "changed" (DataLoss) name the shard and its
// manifest from the reads, as CheckOpenedShard's do from the open.
Result<std::unique_ptr<records::RecordReader>> OpenShard(const ShardInfo& shard,
                                                         const records::RecordReaderOptions& options);

// Fills in missing record counts: from index files where known, else by
// reading each shard once (opened as OpenShard opens it, without decoding
// Examples), in parallel on `executor`. `skip_damage` counts a damaged
// shard's readable records instead of failing.
Status LoadCounts(std::vector<ShardInfo>& shards, Executor& executor, bool skip_damage);

}  // namespace spool::loader
