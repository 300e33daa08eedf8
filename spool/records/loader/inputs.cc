#include "spool/records/loader/inputs.h"

#include <algorithm>
#include <atomic>
#include <set>

#include "spool/core/storage/registry.h"
#include "spool/core/url.h"
#include "spool/records/manifest.h"
#include "spool/records/record_index.h"
#include "spool/records/record_reader.h"

namespace spool::loader {
namespace {

constexpr std::string_view kManifestSuffix = ".manifest.json";

// Where one input lives: its store, the key inside it, and how to name it.
struct Location {
  std::shared_ptr<ObjectStore> store;
  std::string key;
};

Result<Location> Locate(const DataLoaderOptions& options, const std::string& input) {
  if (options.store) return Location{options.store, input};
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, OpenLocation(input, options.store_options));
  return Location{std::move(location.store), std::move(location.key)};
}

std::string FolderOf(std::string_view key) {
  size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(key.substr(0, slash + 1));
}

Status AddGlob(const Location& where, const std::string& input, std::vector<ShardInfo>& out) {
  const std::string& pattern = where.key;
  size_t first_wild = pattern.find_first_of("*?[");
  ListOptions list;
  list.prefix = pattern.substr(0, first_wild);
  SPOOL_ASSIGN_OR_RETURN(ListPage page, ListAll(*where.store, list));
  std::set<std::string> keys;
  for (const ObjectInfo& object : page.objects) keys.insert(object.key);
  size_t before = out.size();
  for (const ObjectInfo& object : page.objects) {
    std::string_view key = object.key;
    if (key.ends_with(".idx") || key.ends_with(kManifestSuffix) || !GlobMatch(pattern, key)) continue;
    ShardInfo shard{where.store->Describe(key), where.store, object.key, std::nullopt, object.size, ""};
    if (std::string index = records::IndexKeyFor(key); keys.count(index)) shard.index_key = index;
    out.push_back(std::move(shard));
  }
  if (out.size() == before) {
    return NotFoundError("no shard matches '" + input + "'; check the pattern ('*' stays within one folder, "
                         "'**' crosses folders)");
  }
  return OkStatus();
}

Status AddManifest(const Location& where, const std::string& input, Executor& executor,
                   std::vector<ShardInfo>& out) {
  SPOOL_ASSIGN_OR_RETURN(records::DatasetManifest manifest, records::ReadManifest(*where.store, where.key));
  const std::vector<std::string> keys = records::ShardKeys(where.key, manifest);
  const std::string folder = FolderOf(where.key);
  const size_t first = out.size();
  for (int i = 0; i < manifest.shards_size(); ++i) {
    const auto& entry = manifest.shards(i);
    const std::string& key = keys[static_cast<size_t>(i)];
    ShardInfo shard{where.store->Describe(key), where.store, key, entry.records(), entry.bytes(), ""};
    if (!entry.index().empty()) shard.index_key = folder + entry.index();
    out.push_back(std::move(shard));
  }
  // A missing or changed shard fails now, not an hour into training.
  TaskGroup group(executor);
  for (size_t i = first; i < out.size(); ++i) {
    group.Submit([&shard = out[i], &input]() -> Status {
      Result<ObjectInfo> info = shard.store->Stat(shard.key);
      if (!info.ok()) {
        if (info.status().code() == StatusCode::kNotFound) {
          return NotFoundError("shard " + shard.url + " named in dataset manifest " + input +
                               " does not exist; restore it or rewrite the dataset");
        }
        return info.status().WithContext("shard " + shard.url + " of dataset manifest " + input);
      }
      if (info->size != *shard.size) {
        return DataLossError("shard " + shard.url + " is " + std::to_string(info->size) +
                             " bytes but dataset manifest " + input + " says " + std::to_string(*shard.size) +
                             "; the shard changed after the manifest was written");
      }
      return OkStatus();
    });
  }
  return group.Wait();
}

bool MatchClass(std::string_view pattern, size_t& p, char c) {
  // pattern[p] == '['; on return p is past ']'.
  size_t i = p + 1;
  bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negate) ++i;
  bool matched = false;
  bool first = true;
  for (; i < pattern.size() && (pattern[i] != ']' || first); ++i, first = false) {
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      matched |= pattern[i] <= c && c <= pattern[i + 2];
      i += 2;
    } else {
      matched |= pattern[i] == c;
    }
  }
  p = i + 1;
  return matched != negate && c != '/';
}

}  // namespace

bool HasWildcard(std::string_view text) { return text.find_first_of("*?[") != std::string_view::npos; }

bool GlobMatch(std::string_view pattern, std::string_view key) {
  size_t p = 0, k = 0;
  // Backtracking points for the last '*' (within a segment) and '**'.
  size_t star_p = std::string_view::npos, star_k = 0;
  while (k < key.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        bool across = p + 1 < pattern.size() && pattern[p + 1] == '*';
        if (across) {
          // '**' matches anything: try the rest of the pattern at every suffix.
          std::string_view rest = pattern.substr(p + 2);
          for (size_t start = k; start <= key.size(); ++start) {
            if (GlobMatch(rest, key.substr(start))) return true;
          }
          return false;
        }
        star_p = ++p;
        star_k = k;
        continue;
      }
      if (pc == '?' && key[k] != '/') {
        ++p, ++k;
        continue;
      }
      if (pc == '[') {
        size_t next = p;
        if (MatchClass(pattern, next, key[k])) {
          p = next, ++k;
          continue;
        }
      } else if (pc == key[k]) {
        ++p, ++k;
        continue;
      }
    }
    // Mismatch: let the last single '*' eat one more character (never a '/').
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

Result<std::vector<ShardInfo>> ResolveInputs(const DataLoaderOptions& options, Executor& executor) {
  if (options.inputs.empty()) return InvalidArgumentError("the loader has no inputs; give shard URLs, a glob or a manifest");
  std::vector<ShardInfo> shards;
  for (const std::string& input : options.inputs) {
    SPOOL_ASSIGN_OR_RETURN(Location where, Locate(options, input));
    if (where.key.ends_with(kManifestSuffix)) {
      SPOOL_RETURN_IF_ERROR(AddManifest(where, input, executor, shards));
    } else if (HasWildcard(where.key)) {
      SPOOL_RETURN_IF_ERROR(AddGlob(where, input, shards));
    } else {
      shards.push_back(ShardInfo{where.store->Describe(where.key), where.store, where.key, std::nullopt,
                                 std::nullopt, ""});
    }
  }
  std::set<std::string> seen;
  std::erase_if(shards, [&](const ShardInfo& shard) { return !seen.insert(shard.url).second; });
  if (shards.size() > UINT32_MAX) return InvalidArgumentError("more than 2^32 shards");
  return shards;
}

Status LoadCounts(std::vector<ShardInfo>& shards, Executor& executor, bool skip_damage) {
  TaskGroup group(executor);
  for (ShardInfo& shard : shards) {
    if (shard.records) continue;
    group.Submit([&shard, skip_damage]() -> Status {
      if (!shard.index_key.empty()) {
        Result<records::RecordIndex> index = records::RecordIndex::Load(*shard.store, shard.index_key, shard.size);
        if (index.ok()) {
          shard.records = index->size();
          return OkStatus();
        }
      }
      records::RecordReaderOptions options;
      if (skip_damage) options.on_corrupt = records::CorruptPolicy::kSkipRestOfShard;
      SPOOL_ASSIGN_OR_RETURN(auto reader, records::RecordReader::Open(*shard.store, shard.key, options));
      uint64_t count = 0;
      std::string_view record;
      while (true) {
        SPOOL_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
        if (!more) break;
        ++count;
      }
      shard.records = count;
      return OkStatus();
    });
  }
  return group.Wait();
}

}  // namespace spool::loader
