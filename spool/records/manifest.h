// The dataset manifest: "<prefix>.manifest.json", written by the sharded
// writer after every shard is committed, so its presence means the dataset
// is complete. It lists the shards (names relative to the manifest's folder),
// their record counts, sizes and CRC32Cs, the compression, and the schema of
// the Examples when known; training code opens a dataset from it without
// listing the bucket. The JSON is the protobuf JSON mapping of
// spool.records.DatasetManifest (records/manifest.proto), with proto field
// names; 64-bit counts are JSON strings, as that mapping has them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/manifest.pb.h"

namespace spool::records {

inline constexpr uint32_t kManifestFormatVersion = 1;

// "<prefix>.manifest.json".
std::string ManifestKeyFor(std::string_view prefix);

Result<std::string> ManifestToJson(const spool::records::DatasetManifest& manifest);
// Parses and checks a manifest: known format version, known compression,
// shard names that stay inside the manifest's folder, totals that add up.
// Errors name `what` (the manifest URL).
Result<spool::records::DatasetManifest> ParseManifest(std::string_view json, std::string_view what);

Result<spool::records::DatasetManifest> ReadManifest(ObjectStore& store, std::string_view manifest_key);

// The store keys of the shards: each name resolved against the folder of
// `manifest_key`.
std::vector<std::string> ShardKeys(std::string_view manifest_key, const spool::records::DatasetManifest& manifest);

}  // namespace spool::records
