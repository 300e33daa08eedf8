// spool cache ls|clear [--dir DIR]: the loader's local shard cache on this
// machine (DataLoaderOptions::cache_dir; spool/records/loader/shard_cache.h).
// The folder defaults to SPOOL_CACHE_DIR, as the loader's does.
#include <memory>
#include <string>

#include "cli/commands/commands.h"
#include "cli/output.h"
#include "spool/core/bytes.h"
#include "spool/core/env.h"
#include "spool/records/loader/shard_cache.h"

namespace spool::cli {
namespace {

struct CacheOptions {
  std::string dir;
};

Result<std::string> CacheDir(const CacheOptions& options) {
  if (!options.dir.empty()) return options.dir;
  if (std::optional<std::string> dir = CurrentEnv().Get("SPOOL_CACHE_DIR")) return *dir;
  return InvalidArgumentError("no shard cache folder: give --dir or set SPOOL_CACHE_DIR");
}

Status RunLs(const CacheOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(std::string dir, CacheDir(options));
  SPOOL_ASSIGN_OR_RETURN(std::vector<loader::CachedFile> files, loader::ListShardCache(dir));
  uint64_t total = 0;
  for (const loader::CachedFile& file : files) {
    total += file.size;
    if (global.json) {
      PrintLine("{\"name\":" + JsonString(file.name) + ",\"size\":" + std::to_string(file.size) + "}");
    } else {
      PrintLine(std::to_string(file.size) + "\t" + file.name);
    }
  }
  if (!global.json && !global.quiet) {
    PrintLine(std::to_string(files.size()) + " shards, " + FormatBytes(total) + " in " + dir);
  }
  return OkStatus();
}

Status RunClear(const CacheOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(std::string dir, CacheDir(options));
  SPOOL_ASSIGN_OR_RETURN(uint64_t removed, loader::ClearShardCache(dir));
  if (global.json) {
    PrintLine("{\"removed_bytes\":" + std::to_string(removed) + "}");
  } else if (!global.quiet) {
    PrintLine("removed " + FormatBytes(removed) + " from " + dir);
  }
  return OkStatus();
}

}  // namespace

Command AddCacheCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<CacheOptions>();
  auto which = std::make_shared<std::string>();
  CLI::App* app = spool.add_subcommand("cache", "Show or empty the loader's local shard cache");
  app->require_subcommand(1);
  for (const char* name : {"ls", "clear"}) {
    CLI::App* sub = app->add_subcommand(
        name, std::string(name) == "ls" ? "List the cached shards and their sizes" : "Remove every cached shard");
    sub->add_option("--dir", options->dir, "the cache folder (default: SPOOL_CACHE_DIR)");
    sub->callback([which, name] { *which = name; });
  }
  app->footer(
      "Examples:\n"
      "  spool cache ls --dir /local/spool-cache\n"
      "  SPOOL_CACHE_DIR=/local/spool-cache spool cache clear\n");
  return {app, [options, which, &global] {
            return *which == "clear" ? RunClear(*options, global) : RunLs(*options, global);
          }};
}

}  // namespace spool::cli
