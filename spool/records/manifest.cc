#include "spool/records/manifest.h"

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

std::vector<std::string> ShardKeys(std::string_view manifest_key, const DatasetManifest& manifest) {
  const std::string folder = FolderOf(manifest_key);
  std::vector<std::string> keys;
  keys.reserve(manifest.shards_size());
  for (const ShardEntry& shard : manifest.shards()) keys.push_back(folder + shard.name());
  return keys;
}

}  // namespace spool::records
