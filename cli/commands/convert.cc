// spool convert SRC DST_PREFIX [--format csv|jsonl|images] [--schema ...]
//   [--shards N | --shard-size 256MiB] [--compression gzip|zlib|none]
//   [--compression-level default|fast|0..9] [--index] [--skip-bad] [--prefix-fanout N]
//   [--task-index I --task-count N]
//
// Turns a CSV table, a JSON Lines file or an image folder into sharded
// TFRecords of tf.train.Examples under DST_PREFIX (any store), with the
// dataset manifest DST_PREFIX.manifest.json written last.
#include <memory>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/convert/csv.h"
#include "cli/convert/dataset_output.h"
#include "cli/convert/image_folder.h"
#include "cli/convert/jsonl.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "spool/core/bytes.h"
#include "spool/core/cancel.h"
#include "spool/core/key_fanout.h"
#include "spool/records/compressed_stream.h"
#include "spool/records/manifest.h"

namespace spool::cli {
namespace {

struct ConvertOptions {
  std::string source;
  std::string destination;
  std::string format;  // csv, jsonl, images; empty: guessed
  std::string schema;
  int shards = 0;
  std::string shard_size;
  std::string compression = "none";
  std::string compression_level = "default";
  bool index = false;
  bool skip_bad = false;
  int prefix_fanout = 0;
  int task_index = -1;
  int task_count = 0;
};

// csv / jsonl from the extension; images for a folder.
Result<std::string> GuessFormat(const StoreLocation& source) {
  std::string key = source.key;
  for (std::string_view ext : {".gz", ".zst"}) {
    if (key.ends_with(ext)) {
      return InvalidArgumentError(source.url.ToString() + " is compressed; decompress it first (zcat " +
                                  source.url.ToString() + " > table.csv)");
    }
  }
  if (key.ends_with(".csv") || key.ends_with(".CSV")) return std::string("csv");
  if (key.ends_with(".jsonl") || key.ends_with(".ndjson") || key.ends_with(".json")) return std::string("jsonl");
  if (key.ends_with('/') || key.empty()) return std::string("images");
  Result<ObjectInfo> info = source.store->Stat(key);
  if (!info.ok() && info.status().code() == StatusCode::kNotFound) {
    SPOOL_ASSIGN_OR_RETURN(bool folder, IsNonEmptyFolder(*source.store, key));
    if (folder) return std::string("images");
    return NotFoundError(source.url.ToString() + ": no such file or folder");
  }
  SPOOL_RETURN_IF_ERROR(info.status());
  return InvalidArgumentError("cannot tell the format of " + source.url.ToString() +
                              " from its name; give --format csv, jsonl or images");
}

Result<std::unique_ptr<ExampleSource>> OpenSource(const StoreLocation& source, const std::string& format,
                                                  const std::string& schema_text) {
  std::optional<std::vector<std::pair<std::string, ColumnType>>> schema;
  if (!schema_text.empty()) {
    if (format == "images") return InvalidArgumentError("--schema applies to csv and jsonl input, not images");
    SPOOL_ASSIGN_OR_RETURN(schema, ParseSchema(schema_text));
  }
  if (format == "csv") {
    SPOOL_ASSIGN_OR_RETURN(auto csv, CsvSource::Open(*source.store, source.key, std::move(schema)));
    return std::unique_ptr<ExampleSource>(std::move(csv));
  }
  if (format == "jsonl") {
    SPOOL_ASSIGN_OR_RETURN(auto jsonl, JsonlSource::Open(*source.store, source.key, std::move(schema)));
    return std::unique_ptr<ExampleSource>(std::move(jsonl));
  }
  SPOOL_ASSIGN_OR_RETURN(auto images, ImageFolderSource::Open(source.store, source.key));
  return std::unique_ptr<ExampleSource>(std::move(images));
}

Result<records::ShardedWriterOptions> WriterOptions(const ConvertOptions& options, const ExampleSource& source) {
  records::ShardedWriterOptions writer;
  SPOOL_ASSIGN_OR_RETURN(writer.compression, records::ParseCompression(options.compression));
  SPOOL_ASSIGN_OR_RETURN(writer.compression_level, records::Deflater::ParseLevel(options.compression_level));
  if (writer.compression == records::Compression::kNone && options.compression_level != "default") {
    return InvalidArgumentError("--compression-level " + options.compression_level +
                                " needs --compression gzip or zlib");
  }
  if (options.shards > 0) {
    writer.num_shards = options.shards;
  } else {
    SPOOL_ASSIGN_OR_RETURN(writer.max_shard_bytes,
                           ParseByteSize(options.shard_size.empty() ? "256MiB" : options.shard_size));
    if (writer.max_shard_bytes == 0) return InvalidArgumentError("--shard-size must be more than 0 bytes");
  }
  if (options.index && writer.compression != records::Compression::kNone) {
    return InvalidArgumentError("--index needs uncompressed shards (index files describe uncompressed bytes); "
                                "drop --index or use --compression none");
  }
  writer.write_index = options.index;
  writer.prefix_fanout = options.prefix_fanout;
  records::Schema schema;
  schema.set_message_type("tensorflow.Example");
  for (const auto& [name, kind] : source.Schema()) {
    records::FeatureSchema* feature = schema.add_features();
    feature->set_name(name);
    feature->set_kind(kind);
  }
  writer.schema = schema;
  return writer;
}

Status RunConvert(const ConvertOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation source, Open(options.source, global));
  SPOOL_ASSIGN_OR_RETURN(StoreLocation destination, Open(options.destination, global));
  if (destination.key.empty() || destination.key.ends_with('/')) {
    return InvalidArgumentError("DST_PREFIX " + destination.url.ToString() +
                                " names a folder; give the dataset a name, e.g. " +
                                destination.store->Describe(JoinKey(destination.key, "train")));
  }
  std::string format = options.format;
  if (format.empty()) {
    SPOOL_ASSIGN_OR_RETURN(format, GuessFormat(source));
  }
  std::optional<TaskSlice> task;
  if (options.task_count > 0 || options.task_index >= 0) {
    if (options.task_count <= 0 || options.task_index < 0) {
      return InvalidArgumentError("give both --task-index and --task-count");
    }
    task = TaskSlice{options.task_index, options.task_count};
  }

  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ExampleSource> input, OpenSource(source, format, options.schema));
  SPOOL_ASSIGN_OR_RETURN(records::ShardedWriterOptions writer_options, WriterOptions(options, *input));
  SPOOL_ASSIGN_OR_RETURN(auto output,
                         DatasetOutput::Open(*destination.store, destination.key, writer_options, task));

  input->ReadAhead([&output](uint64_t position) { return output->Wants(position); });
  Progress progress(global, Progress::Unit::kRecords);
  uint64_t position = 0, bad = 0;
  tensorflow::Example example;
  std::string problem;
  const CancelToken cancel = CancelToken::Current();
  for (;;) {
    if (cancel.cancelled()) return CancelledError("cancelled after " + std::to_string(position) + " records");
    bool wanted = output->Wants(position);
    SPOOL_ASSIGN_OR_RETURN(SourceItem item, input->Next(wanted ? &example : nullptr, &problem));
    if (item == SourceItem::kEnd) break;
    if (item == SourceItem::kBad) {
      if (!options.skip_bad) {
        return InvalidArgumentError(problem + " (fix the input, or pass --skip-bad to skip such lines)");
      }
      ++bad;
      if (!global.quiet) PrintError("skipped " + problem);
      continue;
    }
    if (wanted) SPOOL_RETURN_IF_ERROR(output->Write(position, example));
    ++position;
    progress.Add(1);
  }
  SPOOL_ASSIGN_OR_RETURN(std::optional<records::DatasetManifest> manifest, output->Close());
  progress.Finish();

  const std::string where = destination.url.ToString();
  if (global.json) {
    std::string line = "{\"source\":" + JsonString(source.url.ToString()) + ",\"prefix\":" + JsonString(where) +
                       ",\"format\":" + JsonString(format) + ",\"records\":" + std::to_string(position) +
                       ",\"skipped\":" + std::to_string(bad);
    if (manifest) {
      line += ",\"shards\":" + std::to_string(manifest->shards_size()) +
              ",\"bytes\":" + std::to_string(manifest->total_bytes()) +
              ",\"manifest\":" + JsonString(destination.store->Describe(records::ManifestKeyFor(destination.key)));
    }
    PrintLine(line + "}");
  } else if (!global.quiet) {
    std::string line = (manifest ? "converted " : "read ") + std::to_string(position) + " records from " +
                       source.url.ToString();
    if (bad > 0) line += " (" + std::to_string(bad) + " malformed skipped)";
    if (manifest) {
      line += " into " + std::to_string(manifest->shards_size()) + (manifest->shards_size() == 1 ? " shard (" : " shards (") + FormatBytes(manifest->total_bytes()) +
              ") at " + where + "; manifest " + destination.store->Describe(records::ManifestKeyFor(destination.key));
    } else {
      line += ": task " + std::to_string(task->index) + " of " + std::to_string(task->count) +
              " wrote its shards of " + where + " (no manifest; run spool records manifest when all tasks are done)";
    }
    PrintLine(line);
  }
  return OkStatus();
}

}  // namespace

Command AddConvertCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* app = spool.add_subcommand("convert", "Convert a CSV, JSON Lines file or image folder into TFRecord shards");
  app->add_option("source", options->source, "The input: a .csv or .jsonl file, or a folder of class folders")
      ->required();
  app->add_option("prefix", options->destination,
                  "Where the dataset goes: shards are PREFIX-00000-of-00008.tfrecord, the manifest PREFIX.manifest.json")
      ->required();
  app->add_option("--format", options->format, "csv, jsonl or images (default: from the extension, or images for a folder)")
      ->check(CLI::IsMember({"csv", "jsonl", "images"}));
  app->add_option("--schema", options->schema, "Column types instead of inferring them: name:int64,name:float,name:bytes");
  auto* shards = app->add_option("--shards", options->shards, "Exactly N shards, records dealt round robin")
                     ->check(CLI::Range(1, 1 << 20));
  app->add_option("--shard-size", options->shard_size, "Start a new shard at this many record bytes (default 256MiB)")
      ->excludes(shards);
  app->add_option("--compression", options->compression, "gzip, zlib or none")
      ->check(CLI::IsMember({"gzip", "zlib", "none", "GZIP", "ZLIB", "NONE"}));
  app->add_option("--compression-level", options->compression_level,
                  "default (TensorFlow's bytes), fast (several times faster, files a little larger) or 0..9");
  app->add_flag("--index", options->index, "Write a DALI index file beside each shard (uncompressed shards only)");
  app->add_flag("--skip-bad", options->skip_bad, "Skip malformed lines (each is reported) instead of stopping");
  app->add_option("--prefix-fanout", options->prefix_fanout,
                  "Spread the shards over N key prefixes (PREFIX/3f/NAME-00017-of-01024.tfrecord) for request "
                  "rates beyond one S3 prefix; see docs/performance.md")
      ->check(CLI::Range(1, kMaxPrefixFanout));
  auto* task_index = app->add_option("--task-index", options->task_index,
                                     "Write only the shards s with s % COUNT == INDEX (parallel jobs)");
  auto* task_count = app->add_option("--task-count", options->task_count, "How many tasks share the conversion");
  task_index->needs(task_count)->needs(shards);
  task_count->needs(task_index);
  app->footer(
      "Examples:\n"
      "  spool convert digits.csv s3://my-bucket/digits/train --shards 8 --index\n"
      "  spool convert events.jsonl gs://my-bucket/events/all --compression gzip --skip-bad\n"
      "  spool convert big.csv s3://my-bucket/big/train --compression gzip --compression-level fast\n"
      "  spool convert ./cifar10/train/ s3://my-bucket/cifar10/train --format images --shards 16\n"
      "  spool convert big.csv s3://my-bucket/big/train --shards 1024 --prefix-fanout 16\n"
      "  spool convert s3://raw/imagenet/train/ s3://ds/imagenet/train --format images --shards 1024 \\\n"
      "      --task-index 3 --task-count 16   # then: spool records manifest s3://ds/imagenet/train --shards 1024\n"
      "  (with --prefix-fanout N, give spool records manifest the same --prefix-fanout N)\n");
  return {app, [options, &global] {
            Status status = RunConvert(*options, global);
            if (!status.ok() && CancelToken::Current().cancelled()) {
              // The output aborted as RunConvert returned: open shards were
              // discarded, committed ones deleted, no manifest written.
              return CancelledError("the conversion stopped; no manifest was written and the shards already "
                                    "written were removed");
            }
            return status;
          }};
}

}  // namespace spool::cli
