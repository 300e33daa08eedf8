#include "spool/records/loader/fingerprint.h"

#include <string_view>

#include "spool/core/digest.h"

namespace spool::loader {
namespace {

// The shard's name relative to its manifest's folder (both URLs come from
// the same store's Describe), or its URL when it has no manifest.
std::string_view ShardName(const ShardInfo& shard) {
  if (shard.manifest.empty()) return shard.url;
  const size_t slash = shard.manifest.rfind('/');
  const std::string_view folder =
      std::string_view(shard.manifest).substr(0, slash == std::string::npos ? 0 : slash + 1);
  std::string_view url = shard.url;
  if (url.starts_with(folder)) url.remove_prefix(folder.size());
  return url;
}

}  // namespace

std::string InputsFingerprint(const std::vector<ShardInfo>& shards) {
  Hasher hasher(DigestAlgorithm::kSha256);
  hasher.Update("spool-inputs/1\n");
  for (const ShardInfo& shard : shards) {
    std::string line(shard.manifest.empty() ? "url " : "manifest ");
    line += ShardName(shard);
    // A name may hold any byte but a newline; the fields after it are numbers.
    if (shard.size) line += " bytes=" + std::to_string(*shard.size);
    if (!shard.manifest.empty()) {
      if (shard.records) line += " records=" + std::to_string(*shard.records);
      if (shard.crc32c) line += " crc32c=" + std::to_string(*shard.crc32c);
    }
    line += '\n';
    hasher.Update(line);
  }
  const std::string raw = hasher.Finish();
  return FormatDigest(DigestAlgorithm::kSha256, raw).substr(0, 16);
}

}  // namespace spool::loader
