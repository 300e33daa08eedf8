#include "spool/records/dataset.h"

#include <set>

#include "spool/records/manifest.h"
#include "spool/records/record_index.h"

namespace spool::records {
namespace {

constexpr std::string_view kManifestSuffix = ".manifest.json";
constexpr std::string_view kIndexSuffix = ".idx";

std::string_view BaseNameOf(std::string_view key) {
  const size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

std::string FolderOf(std::string_view key) {
  const size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(key.substr(0, slash + 1));
}

// The end of the class starting at pattern[open] == '[' (the index of its
// ']'), or npos when it is not closed (the '[' is then a literal).
size_t ClassEnd(std::string_view pattern, size_t open) {
  size_t i = open + 1;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) ++i;
  if (i < pattern.size() && pattern[i] == ']') ++i;  // a leading ']' is a member
  return pattern.find(']', i);
}

// Whether `c` is in the class pattern[open, close].
bool InClass(std::string_view pattern, size_t open, size_t close, char c) {
  if (c == '/') return false;
  size_t i = open + 1;
  const bool negate = pattern[i] == '!' || pattern[i] == '^';
  if (negate) ++i;
  bool matched = false;
  for (bool first = true; i < close; ++i, first = false) {
    if (!first && pattern[i] == ']') break;
    if (i + 2 < close && pattern[i + 1] == '-') {
      matched |= pattern[i] <= c && c <= pattern[i + 2];
      i += 2;
    } else {
      matched |= pattern[i] == c;
    }
  }
  return matched != negate;
}

Result<ExpandedInput> FromManifest(ObjectStore& store, std::string_view manifest_key) {
  ExpandedInput input;
  SPOOL_ASSIGN_OR_RETURN(DatasetManifest manifest, ReadManifest(store, manifest_key));
  const std::vector<std::string> keys = ShardKeys(manifest_key, manifest);
  const std::string folder = FolderOf(manifest_key);
  for (int i = 0; i < manifest.shards_size(); ++i) {
    const ShardEntry& entry = manifest.shards(i);
    // 0 is what manifests that predate the field hold (a real CRC of 0 is
    // then merely not checked).
    std::optional<uint32_t> crc;
    if (entry.crc32c() != 0) crc = entry.crc32c();
    DatasetShard shard{keys[static_cast<size_t>(i)], entry.records(), entry.bytes(), "", crc};
    if (!entry.index().empty()) shard.index_key = folder + entry.index();
    input.shards.push_back(std::move(shard));
  }
  input.manifest = std::move(manifest);
  input.manifest_key = std::string(manifest_key);
  return input;
}

// The non-sidecar keys under `list_prefix` that `keep` accepts, with the
// index files the same listing shows beside them.
template <typename Keep>
Result<std::vector<DatasetShard>> ListShards(ObjectStore& store, std::string list_prefix, const Keep& keep) {
  ListOptions list;
  list.prefix = std::move(list_prefix);
  SPOOL_ASSIGN_OR_RETURN(ListPage page, ListAll(store, list));
  std::set<std::string_view> keys;
  for (const ObjectInfo& object : page.objects) keys.insert(object.key);
  std::vector<DatasetShard> shards;
  for (const ObjectInfo& object : page.objects) {
    if (IsSidecarKey(object.key) || !keep(object.key)) continue;
    DatasetShard shard{object.key, std::nullopt, object.size, "", std::nullopt};
    if (std::string index = IndexKeyFor(object.key); keys.count(index)) shard.index_key = std::move(index);
    shards.push_back(std::move(shard));
  }
  return shards;
}

Result<ExpandedInput> FromGlob(ObjectStore& store, std::string_view pattern) {
  ExpandedInput input;
  SPOOL_ASSIGN_OR_RETURN(input.shards,
                         ListShards(store, std::string(pattern.substr(0, pattern.find_first_of("*?["))),
                                    [pattern](std::string_view key) { return GlobMatch(pattern, key); }));
  if (input.shards.empty()) {
    return NotFoundError("no shard matches " + store.Describe(pattern) +
                         "; check the pattern ('*' stays within one folder, '**' crosses folders; "
                         "index files, manifests and hidden files never match)");
  }
  return input;
}

Result<ExpandedInput> FromShardOrDataset(ObjectStore& store, std::string_view key) {
  if (!key.empty() && !key.ends_with('/')) {
    Result<ObjectInfo> info = store.Stat(key);
    if (info.ok()) {
      return ExpandedInput{{DatasetShard{std::string(key), std::nullopt, info->size, "", std::nullopt}}, {}, {}};
    }
    if (info.status().code() != StatusCode::kNotFound) return info.status();
    const std::string manifest_key = ManifestKeyFor(key);
    Result<ObjectInfo> manifest = store.Stat(manifest_key);
    if (manifest.ok()) return FromManifest(store, manifest_key);
    if (manifest.status().code() != StatusCode::kNotFound) return manifest.status();
  }
  ExpandedInput input;
  SPOOL_ASSIGN_OR_RETURN(input.shards, ListShards(store, std::string(key), [](std::string_view) { return true; }));
  if (input.shards.empty()) {
    return NotFoundError(store.Describe(key) + ": no shard, manifest or dataset prefix of that name");
  }
  return input;
}

}  // namespace

bool HasWildcard(std::string_view text) { return text.find_first_of("*?[") != std::string_view::npos; }

bool GlobMatch(std::string_view pattern, std::string_view key) {
  size_t p = 0, k = 0;
  // Where to resume when the last single '*' must take one more character.
  size_t star_p = std::string_view::npos, star_k = 0;
  while (k < key.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*' && p + 1 < pattern.size() && pattern[p + 1] == '*') {
        // '**' takes any run, '/' included: try the rest at every suffix. An
        // earlier '*' taking more would only leave fewer suffixes to try.
        const std::string_view rest = pattern.substr(p + 2);
        for (size_t start = k; start <= key.size(); ++start) {
          if (GlobMatch(rest, key.substr(start))) return true;
        }
        return false;
      }
      if (pc == '*') {
        star_p = ++p;
        star_k = k;
        continue;
      }
      if (pc == '?' && key[k] != '/') {
        ++p, ++k;
        continue;
      }
      const size_t close = pc == '[' ? ClassEnd(pattern, p) : std::string_view::npos;
      if (close != std::string_view::npos) {
        if (InClass(pattern, p, close, key[k])) {
          p = close + 1, ++k;
          continue;
        }
      } else if (pc == key[k] && pc != '?') {
        ++p, ++k;
        continue;
      }
    }
    // Mismatch: the last single '*' takes one more character, never a '/'.
    if (star_p != std::string_view::npos && key[star_k] != '/') {
      p = star_p;
      k = ++star_k;
      continue;
    }
    return false;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool IsManifestKey(std::string_view key) { return key.ends_with(kManifestSuffix); }

bool IsSidecarKey(std::string_view key) {
  return BaseNameOf(key).starts_with('.') || key.ends_with(kIndexSuffix) || IsManifestKey(key);
}

Result<ExpandedInput> ExpandInput(ObjectStore& store, std::string_view key, PlainKey plain) {
  if (IsManifestKey(key)) return FromManifest(store, key);
  if (HasWildcard(key)) return FromGlob(store, key);
  if (plain == PlainKey::kShardOrDataset) return FromShardOrDataset(store, key);
  return ExpandedInput{{DatasetShard{std::string(key), std::nullopt, std::nullopt, "", std::nullopt}}, {}, {}};
}

}  // namespace spool::records
