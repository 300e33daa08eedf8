#include "spool/records/manifest.h"

#include "spool/core/version.h"
#include "spool/records/compression.h"
#include "spool/records/json_view.h"

namespace spool::records {
namespace {

std::string FolderOf(std::string_view key) {
  const size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(key.substr(0, slash + 1));
}

// A shard name must name a file in the manifest's folder or below it.
bool IsSafeName(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string_view::npos) return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

std::string ManifestKeyFor(std::string_view prefix) { return std::string(prefix) + ".manifest.json"; }

Result<std::string> ManifestToJson(const DatasetManifest& manifest) {
  SPOOL_ASSIGN_OR_RETURN(std::string json, MessageToJson(manifest, /*pretty=*/true));
  return json;
}

Result<DatasetManifest> ParseManifest(std::string_view json, std::string_view what) {
  DatasetManifest manifest;
  SPOOL_RETURN_IF_ERROR(JsonToMessage(json, &manifest, what));
  const std::string where(what);
  if (manifest.format_version() == 0) {
    return InvalidArgumentError(where + " is not a spool dataset manifest (no format_version)");
  }
  if (manifest.format_version() > kManifestFormatVersion) {
    return FailedPreconditionError(where + " has format version " + std::to_string(manifest.format_version()) +
                                   "; this spool reads version " + std::to_string(kManifestFormatVersion) +
                                   ": upgrade spool");
  }
  if (!manifest.record_format().empty() && manifest.record_format() != "tfrecord") {
    return InvalidArgumentError(where + " describes '" + manifest.record_format() +
                                "' records; spool reads tfrecord");
  }
  auto compression = ParseCompression(manifest.compression());
  if (!compression.ok()) return compression.status().WithContext(where);
  uint64_t records = 0;
  uint64_t bytes = 0;
  for (const ShardEntry& shard : manifest.shards()) {
    if (!IsSafeName(shard.name())) {
      return InvalidArgumentError(where + " names a shard '" + shard.name() +
                                  "' outside its folder; shard names must be relative, without '..'");
    }
    if (!shard.index().empty() && !IsSafeName(shard.index())) {
      return InvalidArgumentError(where + " names an index '" + shard.index() + "' outside its folder");
    }
    records += shard.records();
    bytes += shard.bytes();
  }
  if (records != manifest.total_records() || bytes != manifest.total_bytes()) {
    return InvalidArgumentError(where + " is inconsistent: its shards add up to " + std::to_string(records) +
                                " records and " + std::to_string(bytes) + " bytes, its totals say " +
                                std::to_string(manifest.total_records()) + " and " +
                                std::to_string(manifest.total_bytes()) + "; rewrite the dataset");
  }
  return manifest;
}

Result<DatasetManifest> ReadManifest(ObjectStore& store, std::string_view manifest_key) {
  SPOOL_ASSIGN_OR_RETURN(std::string json, ReadAll(store, manifest_key));
  return ParseManifest(json, store.Describe(manifest_key));
}

ManifestBuilder::ManifestBuilder(std::string manifest_key, Compression compression)
    : manifest_key_(std::move(manifest_key)), folder_(FolderOf(manifest_key_)) {
  manifest_.set_format_version(kManifestFormatVersion);
  manifest_.set_record_format("tfrecord");
  manifest_.set_compression(std::string(CompressionName(compression)));
  manifest_.set_created_by(std::string("spool ") + VersionString());
}

void ManifestBuilder::SetSchema(Schema schema) { schema_ = std::move(schema); }

void ManifestBuilder::NoteExample(const tensorflow::Example& example) {
  if (schema_ || schema_unknown_) return;
  for (const auto& [name, feature] : example.features().feature()) {
    const FeatureKind kind = KindOf(feature);
    if (kind == FeatureKind::kNone) continue;
    auto [it, inserted] = seen_features_.emplace(name, std::string(FeatureKindName(kind)));
    if (!inserted && it->second != FeatureKindName(kind)) it->second = "mixed";
  }
}

void ManifestBuilder::NoteRecord(std::string_view record) {
  if (schema_ || schema_unknown_) return;
  Result<tensorflow::Example> example = ParseExample(record);
  if (!example.ok()) {
    schema_unknown_ = true;
    seen_features_.clear();
    return;
  }
  NoteExample(*example);
}

Status ManifestBuilder::AddShard(std::string_view key, uint64_t records, uint64_t bytes, uint32_t crc32c,
                                 std::string_view index_key) {
  for (std::string_view file : {key, index_key}) {
    if (!file.empty() && (!file.starts_with(folder_) || !IsSafeName(file.substr(folder_.size())))) {
      return InvalidArgumentError(std::string(file) + " is not in the folder of the manifest " + manifest_key_ +
                                  "; a manifest lists the files in its folder or below it");
    }
  }
  ShardEntry* entry = manifest_.add_shards();
  entry->set_name(std::string(key.substr(folder_.size())));
  entry->set_records(records);
  entry->set_bytes(bytes);
  entry->set_crc32c(crc32c);
  if (!index_key.empty()) entry->set_index(std::string(index_key.substr(folder_.size())));
  manifest_.set_total_records(manifest_.total_records() + records);
  manifest_.set_total_bytes(manifest_.total_bytes() + bytes);
  return OkStatus();
}

DatasetManifest ManifestBuilder::Build() const {
  DatasetManifest manifest = manifest_;
  if (schema_) {
    *manifest.mutable_schema() = *schema_;
  } else if (!schema_unknown_ && !seen_features_.empty()) {
    Schema* schema = manifest.mutable_schema();
    schema->set_message_type("tensorflow.Example");
    for (const auto& [name, kind] : seen_features_) {
      FeatureSchema* feature = schema->add_features();
      feature->set_name(name);
      feature->set_kind(kind);
    }
  }
  return manifest;
}

std::vector<std::string> ShardKeys(std::string_view manifest_key, const DatasetManifest& manifest) {
  const std::string folder = FolderOf(manifest_key);
  std::vector<std::string> keys;
  keys.reserve(manifest.shards_size());
  for (const ShardEntry& shard : manifest.shards()) keys.push_back(folder + shard.name());
  return keys;
}

}  // namespace spool::records
