// The dataset manifest: "<prefix>.manifest.json", written by the sharded
// writer after every shard is committed, so its presence means the dataset
// is complete. It lists the shards (names relative to the manifest's folder),
// their record counts, sizes and CRC32Cs, the compression, and the schema of
// the Examples when known; training code opens a dataset from it without
// listing the bucket. The JSON is the protobuf JSON mapping of
// spool.records.DatasetManifest (records/manifest.proto), with proto field
// names; 64-bit counts are JSON strings, as that mapping has them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/compression.h"
#include "spool/records/example.h"
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

// Builds a dataset manifest: the one place that decides its fields (format,
// shard names, totals, schema, created_by), used by the sharded writer and by
// `spool records manifest`, so both write the same manifest for the same
// shards. Not thread-safe.
class ManifestBuilder {
 public:
  ManifestBuilder(std::string manifest_key, Compression compression);

  // The Examples' schema, when the caller knows it; inference stops.
  void SetSchema(spool::records::Schema schema);
  // Schema inference: every feature seen with a value kind, by name, with
  // its kind ("mixed" when Examples disagree).
  void NoteExample(const tensorflow::Example& example);
  // Infers from a serialized record; a record that is not a tf.train.Example
  // makes the schema unknown (the manifest then has none).
  void NoteRecord(std::string_view record);

  // Appends the next shard. `key` and `index_key` (empty: no index) must be
  // in the manifest's folder or below it: InvalidArgument otherwise.
  Status AddShard(std::string_view key, uint64_t records, uint64_t bytes, uint32_t crc32c,
                  std::string_view index_key = {});

  const std::string& manifest_key() const { return manifest_key_; }
  spool::records::DatasetManifest Build() const;

 private:
  std::string manifest_key_;
  std::string folder_;
  spool::records::DatasetManifest manifest_;  // everything but the schema
  std::optional<spool::records::Schema> schema_;
  std::map<std::string, std::string> seen_features_;  // name -> kind
  bool schema_unknown_ = false;
};

}  // namespace spool::records
