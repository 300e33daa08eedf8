// spool records count|head|cat|verify|index|manifest URL...
//
// Look inside TFRecord datasets on any store. A URL is a shard, a glob or
// prefix of shards, or a dataset manifest (see shard_inputs.h).
#include <memory>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/commands/object_checksum.h"
#include "cli/commands/shard_inputs.h"
#include "cli/output.h"
#include "spool/core/crc32c.h"
#include "spool/core/key_fanout.h"
#include "spool/records/example.h"
#include "spool/records/json_view.h"
#include "spool/records/manifest.h"
#include "spool/records/record_index.h"
#include "spool/records/record_reader.h"
#include "spool/records/sharded_writer.h"

namespace spool::cli {
namespace {

struct RecordsOptions {
  std::vector<std::string> urls;
  size_t head = 10;
  bool sequence = false;  // SequenceExample payloads
  bool pretty = false;
  // manifest
  std::string prefix;
  int shards = 0;
  std::string compression = "none";
  std::string suffix = ".tfrecord";
  int prefix_fanout = 0;  // as given to spool convert
};

// Calls `visit` with each record of `key` until it returns false.
Status ForEachRecord(ObjectStore& store, const std::string& key,
                     const std::function<Result<bool>(std::string_view)>& visit) {
  SPOOL_ASSIGN_OR_RETURN(auto reader, records::RecordReader::Open(store, key));
  std::string_view record;
  for (;;) {
    SPOOL_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) return OkStatus();
    SPOOL_ASSIGN_OR_RETURN(bool go_on, visit(record));
    if (!go_on) return OkStatus();
  }
}

Result<uint64_t> CountByReading(ObjectStore& store, const std::string& key) {
  uint64_t count = 0;
  SPOOL_RETURN_IF_ERROR(ForEachRecord(store, key, [&count](std::string_view) -> Result<bool> {
    ++count;
    return true;
  }));
  return count;
}

// How many records `key` holds: from its index file when there is one that
// fits the shard, else by reading it.
Result<std::pair<uint64_t, std::string>> CountShard(ObjectStore& store, const std::string& key) {
  SPOOL_ASSIGN_OR_RETURN(ObjectInfo info, store.Stat(key));
  Result<records::RecordIndex> index = records::RecordIndex::Load(store, records::IndexKeyFor(key), info.size);
  if (index.ok()) return std::make_pair(static_cast<uint64_t>(index->size()), std::string("index"));
  SPOOL_ASSIGN_OR_RETURN(uint64_t count, CountByReading(store, key));
  return std::make_pair(count, std::string("read"));
}

Status RunCount(const RecordsOptions& options, const GlobalOptions& global) {
  for (const std::string& url : options.urls) {
    SPOOL_ASSIGN_OR_RETURN(ShardSet set, ResolveShards(url, global));
    uint64_t total = 0;
    std::string how = "manifest";
    if (set.manifest) {
      total = set.manifest->total_records();
    } else {
      how = "index";
      for (const std::string& key : set.keys) {
        SPOOL_ASSIGN_OR_RETURN(auto counted, CountShard(*set.store, key));
        total += counted.first;
        if (counted.second == "read") how = "read";
      }
    }
    if (global.json) {
      PrintLine("{\"url\":" + JsonString(url) + ",\"records\":" + std::to_string(total) +
                ",\"shards\":" + std::to_string(set.keys.size()) + ",\"from\":" + JsonString(how) + "}");
    } else {
      PrintLine(std::to_string(total) + " records in " + std::to_string(set.keys.size()) + " shard" +
                (set.keys.size() == 1 ? "" : "s") + "  " + url);
    }
  }
  return OkStatus();
}

// head (limit) and cat (no limit): each record as one JSON line.
Status RunPrint(const RecordsOptions& options, const GlobalOptions& global, std::optional<size_t> limit) {
  const auto type = options.sequence ? records::PayloadType::kSequenceExample : records::PayloadType::kExample;
  size_t printed = 0;
  for (const std::string& url : options.urls) {
    SPOOL_ASSIGN_OR_RETURN(ShardSet set, ResolveShards(url, global));
    for (const std::string& key : set.keys) {
      if (limit && printed >= *limit) return OkStatus();
      uint64_t index = 0;
      SPOOL_RETURN_IF_ERROR(ForEachRecord(*set.store, key, [&](std::string_view record) -> Result<bool> {
        Result<std::string> json = records::RecordToJson(record, type, options.pretty);
        if (!json.ok()) {
          return DataLossError(set.store->Describe(key) + ": record " + std::to_string(index) + " is not a " +
                               (options.sequence ? "tf.train.SequenceExample" : "tf.train.Example") +
                               (options.sequence ? "" : " (try --sequence for SequenceExamples)"));
        }
        PrintLine(*json);
        ++index;
        ++printed;
        return !limit || printed < *limit;
      }));
    }
  }
  return OkStatus();
}

// A shard whose records all check out may still not be the one the manifest
// describes (replaced by another, truncated at a record boundary): its record
// count, size and whole-object CRC32C must match the manifest's too. The
// CRC32C is the one the store keeps when it keeps one (GCS; S3 with full-object
// checksums), else computed by reading the shard again. A manifest crc32c of
// 0 means none was recorded.
Status CheckAgainstManifest(ObjectStore& store, const std::string& key, const records::ShardEntry& entry,
                            uint64_t records) {
  const std::string url = store.Describe(key);
  if (entry.records() != records) {
    return DataLossError(url + " holds " + std::to_string(records) + " records, its manifest says " +
                         std::to_string(entry.records()));
  }
  SPOOL_ASSIGN_OR_RETURN(ObjectInfo info, store.Stat(key));
  if (info.size != entry.bytes()) {
    return DataLossError(url + " holds " + std::to_string(info.size) + " bytes, its manifest says " +
                         std::to_string(entry.bytes()));
  }
  if (entry.crc32c() == 0) return OkStatus();
  SPOOL_ASSIGN_OR_RETURN(uint32_t crc, Crc32cOf(store, info));
  if (crc != entry.crc32c()) {
    return DataLossError(url + " has CRC32C " + crc32c::ToHex(crc) + ", its manifest says " +
                         crc32c::ToHex(entry.crc32c()) + ": it is not the shard the manifest was written for");
  }
  return OkStatus();
}

Status RunVerify(const RecordsOptions& options, const GlobalOptions& global) {
  size_t shards = 0, damaged = 0;
  uint64_t total = 0;
  bool any_manifest = false;
  Status first_damage;
  for (const std::string& url : options.urls) {
    SPOOL_ASSIGN_OR_RETURN(ShardSet set, ResolveShards(url, global));
    any_manifest = any_manifest || set.manifest.has_value();
    for (size_t i = 0; i < set.keys.size(); ++i) {
      const std::string& key = set.keys[i];
      const std::string shard_url = set.store->Describe(key);
      ++shards;
      Result<uint64_t> count = CountByReading(*set.store, key);
      Status problem = count.status();
      if (problem.ok() && set.manifest) problem = CheckAgainstManifest(*set.store, key, set.manifest->shards(i), *count);
      if (!problem.ok() && problem.code() != StatusCode::kDataLoss) return problem;  // I/O, not damage
      if (problem.ok()) total += *count;
      if (!problem.ok()) {
        ++damaged;
        if (first_damage.ok()) first_damage = problem;
      }
      if (global.json) {
        PrintLine("{\"shard\":" + JsonString(shard_url) + ",\"ok\":" + (problem.ok() ? "true" : "false") +
                  (problem.ok() ? ",\"records\":" + std::to_string(*count)
                                : ",\"error\":" + JsonString(problem.message())) +
                  "}");
      } else if (!problem.ok()) {
        PrintLine("DAMAGED " + problem.message());
      } else if (!global.quiet) {
        PrintLine("ok " + shard_url + " (" + std::to_string(*count) + " records)");
      }
    }
  }
  if (damaged > 0) {
    return DataLossError(std::to_string(damaged) + " of " + std::to_string(shards) +
                         " shards are damaged; first: " + first_damage.message());
  }
  if (!global.json && !global.quiet) {
    PrintLine("verified " + std::to_string(shards) + " shards, " + std::to_string(total) +
              " records: every CRC matches" + (any_manifest ? ", and every shard its manifest" : ""));
  }
  return OkStatus();
}

Status RunIndex(const RecordsOptions& options, const GlobalOptions& global) {
  for (const std::string& url : options.urls) {
    SPOOL_ASSIGN_OR_RETURN(ShardSet set, ResolveShards(url, global));
    for (const std::string& key : set.keys) {
      SPOOL_ASSIGN_OR_RETURN(records::RecordIndex index, records::RecordIndex::Build(*set.store, key));
      const std::string index_key = records::IndexKeyFor(key);
      SPOOL_RETURN_IF_ERROR(WriteAll(*set.store, index_key, index.Serialize()).status());
      if (global.json) {
        PrintLine("{\"shard\":" + JsonString(set.store->Describe(key)) + ",\"index\":" +
                  JsonString(set.store->Describe(index_key)) + ",\"records\":" + std::to_string(index.size()) + "}");
      } else if (!global.quiet) {
        PrintLine("indexed " + set.store->Describe(key) + " (" + std::to_string(index.size()) + " records)");
      }
    }
  }
  return OkStatus();
}

Status RunManifest(const RecordsOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(options.prefix, global));
  ObjectStore& store = *location.store;
  SPOOL_ASSIGN_OR_RETURN(records::Compression compression, records::ParseCompression(options.compression));
  std::vector<std::string> keys;
  if (options.prefix_fanout > 1 && options.shards <= 0) {
    return InvalidArgumentError("--prefix-fanout needs --shards N: fanned-out shards are found by their names");
  }
  if (options.shards > 0) {
    std::vector<std::string> missing;
    for (int shard = 0; shard < options.shards; ++shard) {
      std::string key = records::ShardedWriter::ShardKey(location.key, shard, options.shards, options.suffix,
                                                         compression, options.prefix_fanout);
      Result<ObjectInfo> info = store.Stat(key);
      if (info.status().code() == StatusCode::kNotFound) {
        missing.push_back(store.Describe(key));
        continue;
      }
      SPOOL_RETURN_IF_ERROR(info.status());
      keys.push_back(key);
    }
    if (!missing.empty()) {
      return FailedPreconditionError(std::to_string(missing.size()) + " of " + std::to_string(options.shards) +
                                     " shards are missing (first: " + missing.front() +
                                     "); wait for every convert task to finish, or rerun the failed ones");
    }
  } else {
    SPOOL_ASSIGN_OR_RETURN(ShardSet set, ResolveShards(location.url.ToString() + "-*", global));
    keys = std::move(set.keys);
  }

  // The same builder as the sharded writer's, so this manifest is the one a
  // single run would have written (schema inferred from every record).
  records::ManifestBuilder builder(records::ManifestKeyFor(location.key), compression);
  for (const std::string& key : keys) {
    SPOOL_ASSIGN_OR_RETURN(ObjectInfo info, store.Stat(key));
    SPOOL_ASSIGN_OR_RETURN(uint32_t crc, ComputeCrc32c(store, key));
    uint64_t count = 0;
    SPOOL_RETURN_IF_ERROR(ForEachRecord(store, key, [&](std::string_view record) -> Result<bool> {
      builder.NoteRecord(record);
      ++count;
      return true;
    }));
    const std::string index_key = records::IndexKeyFor(key);
    const bool has_index = store.Stat(index_key).ok();
    SPOOL_RETURN_IF_ERROR(builder.AddShard(key, count, info.size, crc, has_index ? index_key : std::string()));
  }
  const records::DatasetManifest manifest = builder.Build();
  SPOOL_ASSIGN_OR_RETURN(std::string json, records::ManifestToJson(manifest));
  const std::string& manifest_key = builder.manifest_key();
  SPOOL_RETURN_IF_ERROR(WriteAll(store, manifest_key, json).status());
  if (global.json) {
    PrintLine("{\"manifest\":" + JsonString(store.Describe(manifest_key)) + ",\"shards\":" +
              std::to_string(keys.size()) + ",\"records\":" + std::to_string(manifest.total_records()) + "}");
  } else if (!global.quiet) {
    PrintLine("wrote " + store.Describe(manifest_key) + ": " + std::to_string(keys.size()) + " shards, " +
              std::to_string(manifest.total_records()) + " records");
  }
  return OkStatus();
}

CLI::App* AddUrls(CLI::App* app, RecordsOptions& options) {
  app->add_option("urls", options.urls, "Shards, globs or prefixes of shards, or dataset manifests")->required();
  return app;
}

}  // namespace

Command AddRecordsCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<RecordsOptions>();
  CLI::App* app = spool.add_subcommand("records", "Count, print, verify and index TFRecord datasets");
  app->require_subcommand(1);
  app->footer(
      "A URL is a shard, a glob or prefix of shards (quote globs), or a dataset manifest.\n"
      "Example: spool records head -n 3 s3://my-bucket/digits/train.manifest.json\n");
  auto* count = AddUrls(app->add_subcommand("count", "Count records (from the manifest or index files when there are)"),
                        *options);
  count->footer("Example: spool records count s3://my-bucket/digits/train.manifest.json\n");
  auto* head = AddUrls(app->add_subcommand("head", "Print the first records as JSON lines"), *options);
  head->add_option("-n,--lines", options->head, "How many records (default 10)");
  head->add_flag("--sequence", options->sequence, "Records are tf.train.SequenceExamples");
  head->add_flag("--pretty", options->pretty, "Indented JSON");
  head->footer("Example: spool records head -n 2 'gs://my-bucket/events/all-*'\n");
  auto* cat = AddUrls(app->add_subcommand("cat", "Print every record as a JSON line"), *options);
  cat->add_flag("--sequence", options->sequence, "Records are tf.train.SequenceExamples");
  cat->add_flag("--pretty", options->pretty, "Indented JSON");
  cat->footer("Example: spool records cat ./data/train-00000-of-00004.tfrecord | jq .features\n");
  auto* verify = AddUrls(app->add_subcommand("verify", "Check every record's CRCs (exit 3 when a shard is damaged)"),
                         *options);
  verify->footer("Example: spool records verify s3://my-bucket/digits/train.manifest.json\n");
  auto* index = AddUrls(app->add_subcommand("index", "Write DALI index files (<shard>.idx) beside uncompressed shards"),
                        *options);
  index->footer("Example: spool records index 's3://my-bucket/digits/train-*'\n");
  auto* manifest = app->add_subcommand("manifest", "Write the dataset manifest of shards written by parallel tasks");
  manifest->add_option("prefix", options->prefix, "The dataset prefix given to spool convert")->required();
  manifest->add_option("--shards", options->shards, "The shard count: every one of them must exist (default: list)");
  manifest->add_option("--compression", options->compression, "gzip, zlib or none, as converted")
      ->check(CLI::IsMember({"gzip", "zlib", "none", "GZIP", "ZLIB", "NONE"}));
  manifest->add_option("--suffix", options->suffix, "Shard suffix before the compression extension (.tfrecord)");
  manifest->add_option("--prefix-fanout", options->prefix_fanout, "The --prefix-fanout the tasks converted with")
      ->check(CLI::Range(1, kMaxPrefixFanout));
  manifest->footer("Example: spool records manifest s3://ds/imagenet/train --shards 1024 --compression gzip\n");

  return {app, [=, &global]() -> Status {
            if (count->parsed()) return RunCount(*options, global);
            if (head->parsed()) return RunPrint(*options, global, options->head);
            if (cat->parsed()) return RunPrint(*options, global, std::nullopt);
            if (verify->parsed()) return RunVerify(*options, global);
            if (index->parsed()) return RunIndex(*options, global);
            return RunManifest(*options, global);
          }};
}

}  // namespace spool::cli
