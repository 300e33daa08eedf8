// spool sync SRC DST [--delete] [--dry-run]
//
// Makes the folder DST hold what the folder SRC holds: copies each object
// that is missing in DST or differs in size or CRC32C (the stores' own
// checksums where they keep them, else computed by reading both), and with
// --delete removes what DST has that SRC does not. Keys that would leave DST
// ("..", absolute) are refused. Copies run in parallel.
#include <map>
#include <memory>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/commands/object_checksum.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "spool/core/cancel.h"
#include "spool/core/executor.h"
#include "spool/core/storage/transfer.h"

namespace spool::cli {
namespace {

struct SyncOptions {
  std::string source;
  std::string destination;
  bool delete_extra = false;
  bool dry_run = false;
  bool no_resume = false;
};

// Every object below the folder `prefix`, by key relative to it. A folder
// that does not exist is empty. Warns, unless `quiet`, of what the listing
// left out (FIFOs, sockets, ...).
Result<std::map<std::string, ObjectInfo>> ListFolder(ObjectStore& store, const std::string& prefix, bool quiet) {
  std::map<std::string, ObjectInfo> objects;
  ListOptions list;
  list.prefix = prefix;
  Status listed = ForEachPage(store, list, [&](const ListPage& page) {
    WarnSkipped(store, page, quiet);
    for (const ObjectInfo& info : page.objects) objects.emplace(info.key.substr(prefix.size()), info);
    return OkStatus();
  });
  if (!listed.ok() && listed.code() != StatusCode::kNotFound) return listed;
  return objects;
}

// Whether `to` already holds what `from` holds.
Result<bool> SameContent(ObjectStore& from_store, const ObjectInfo& from, ObjectStore& to_store, const ObjectInfo& to) {
  if (from.size != to.size) return false;
  SPOOL_ASSIGN_OR_RETURN(uint32_t from_crc, Crc32cOf(from_store, from));
  SPOOL_ASSIGN_OR_RETURN(uint32_t to_crc, Crc32cOf(to_store, to));
  return from_crc == to_crc;
}

Status RunSync(const SyncOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation source, Open(options.source, global));
  SPOOL_ASSIGN_OR_RETURN(StoreLocation destination, Open(options.destination, global));
  const std::string from_prefix = FolderPrefix(source.key);
  const std::string to_prefix = FolderPrefix(destination.key);
  SPOOL_ASSIGN_OR_RETURN(auto from_objects, ListFolder(*source.store, from_prefix, global.quiet));
  if (from_objects.empty()) {
    return NotFoundError(source.store->Describe(from_prefix) + " holds nothing to sync (is the folder right?)");
  }
  // The destination's own listing is quiet: its special files are not ours to report.
  SPOOL_ASSIGN_OR_RETURN(auto to_objects, ListFolder(*destination.store, to_prefix, /*quiet=*/true));

  struct Copy {
    std::string relative;
    ObjectInfo source;  // as listed
  };
  std::vector<Copy> copies;
  size_t unchanged = 0;
  for (const auto& [relative, info] : from_objects) {
    if (!IsSafeRelativeKey(relative)) {
      return InvalidArgumentError("refusing to sync " + source.store->Describe(info.key) +
                                  ": its name would leave the destination folder");
    }
    if (IsLocal(destination) && PassesThroughSymlink("/" + to_prefix, relative)) {
      return InvalidArgumentError("refusing to sync " + source.store->Describe(info.key) +
                                  ": a folder on its way in the destination is a symbolic link");
    }
    auto existing = to_objects.find(relative);
    if (existing != to_objects.end()) {
      SPOOL_ASSIGN_OR_RETURN(bool same, SameContent(*source.store, info, *destination.store, existing->second));
      if (same) {
        ++unchanged;
        continue;
      }
    }
    copies.push_back({relative, info});
  }
  std::vector<std::string> extra;
  if (options.delete_extra) {
    for (const auto& [relative, info] : to_objects) {
      if (!from_objects.contains(relative)) extra.push_back(info.key);
    }
  }

  uint64_t total = 0;
  for (const Copy& copy : copies) total += copy.source.size;
  Progress progress(global, Progress::Unit::kBytes, total);
  TransferOptions transfer;
  transfer.on_progress = [&progress](uint64_t bytes) { progress.Add(bytes); };
  transfer.resume = !options.no_resume;
  std::mutex print_mu;
  auto report = [&](const std::string& verb, const std::string& from, const std::string& to, uint64_t size) {
    std::lock_guard lock(print_mu);
    if (global.json) {
      PrintLine("{\"" + verb + "\":" + JsonString(from) + (to.empty() ? "" : ",\"to\":" + JsonString(to)) +
                ",\"size\":" + std::to_string(size) + (options.dry_run ? ",\"dry_run\":true" : "") + "}");
    } else if (!global.quiet && (!progress.shown() || options.dry_run)) {
      PrintLine((options.dry_run ? "would " : "") + verb + " " + from + (to.empty() ? "" : " -> " + to));
    }
  };
  // Copies go in batches of one per executor thread (SPOOL_THREADS), so the
  // nesting of waits and the buffers in flight stay bounded.
  const size_t batch = static_cast<size_t>(DefaultExecutor().threads());
  std::atomic<size_t> copied{0};
  for (size_t start = 0; start < copies.size(); start += batch) {
    TaskGroup group(DefaultExecutor());
    for (size_t i = start; i < std::min(copies.size(), start + batch); ++i) {
      group.Submit([&, i]() -> Status {
        const Copy& copy = copies[i];
        ObjectEnd from{source.store.get(), from_prefix + copy.relative, IsLocal(source)};
        ObjectEnd to{destination.store.get(), to_prefix + copy.relative, IsLocal(destination)};
        if (!options.dry_run) {
          TransferOptions one = transfer;
          one.listed = copy.source;
          SPOOL_RETURN_IF_ERROR(CopyObjectBetween(from, to, one).status());
        }
        report(options.dry_run ? "copy" : "copied", source.store->Describe(from.key),
               destination.store->Describe(to.key), copy.source.size);
        ++copied;
        return OkStatus();
      });
    }
    Status waited = group.Wait();
    if (CancelToken::Current().cancelled()) {
      return CancelledError(std::to_string(copied.load()) + " of " + std::to_string(copies.size()) +
                            " copies finished; the rest stopped, leaving nothing partial (incomplete uploads "
                            "aborted, partial downloads removed)" +
                            (options.delete_extra ? "; nothing was deleted" : ""));
    }
    SPOOL_RETURN_IF_ERROR(waited);
  }
  progress.Finish();
  if (!extra.empty() && !options.dry_run) {
    SPOOL_ASSIGN_OR_RETURN(std::vector<DeleteFailure> failures, destination.store->DeleteMany(extra));
    if (!failures.empty()) return failures.front().status;
  }
  for (const std::string& key : extra) report(options.dry_run ? "delete" : "deleted", destination.store->Describe(key), "", 0);
  if (!global.json && !global.quiet) {
    PrintLine(std::string(options.dry_run ? "dry run: " : "") + std::to_string(copies.size()) + " copied, " +
              std::to_string(extra.size()) + " deleted, " + std::to_string(unchanged) + " already up to date");
  }
  return OkStatus();
}

}  // namespace

Command AddSyncCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<SyncOptions>();
  CLI::App* app = spool.add_subcommand("sync", "Copy what is missing or different from one folder to another");
  app->add_option("source", options->source, "The folder to copy from (any URL or local path)")->required();
  app->add_option("destination", options->destination, "The folder to bring up to date")->required();
  app->add_flag("--delete", options->delete_extra, "Also delete what the destination has and the source does not");
  app->add_flag("--dry-run", options->dry_run, "Only say what would be copied and deleted");
  app->add_flag("--no-resume", options->no_resume,
                "Do not continue uploads a killed spool left, and keep no state for them");
  app->footer(
      "Examples:\n"
      "  spool sync ./dataset/ s3://my-bucket/dataset/\n"
      "  spool sync --delete gs://my-bucket/models/ ./models/\n");
  return {app, [options, &global] { return RunSync(*options, global); }};
}

}  // namespace spool::cli
