// spool sync SRC DST [--delete] [--dry-run]
//
// Makes the folder DST hold what the folder SRC holds: copies each object
// that is missing in DST or differs in size or CRC32C (the stores' own
// checksums where they keep them, else computed by reading both), and with
// --delete removes what DST has that SRC does not. Objects are placed in DST
// as cp -r places them (FolderMirror): folder markers become local folders,
// and a name that could leave DST ("..") is refused, before anything is
// copied. Copies run in parallel.
#include <map>
#include <memory>
#include <set>

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
  bool fsync = false;
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
    std::string to_key;
    ObjectInfo source;  // as listed
  };
  std::vector<Copy> copies;
  std::vector<std::string> folders;  // folder markers to make as local folders
  std::set<std::string> placed;      // every name the source fills in the destination
  std::vector<Status> refused;
  size_t unchanged = 0;
  FolderMirror mirror(*source.store, from_prefix, destination);
  for (const auto& [relative, info] : from_objects) {
    Result<Placement> placement = mirror.Place(info);
    if (!placement.ok()) {
      refused.push_back(placement.status());
      continue;
    }
    if (placement->relative.empty()) continue;  // the source folder's own marker
    placed.insert(placement->relative);
    if (placement->make_folder) {
      folders.push_back(placement->key);
      continue;
    }
    auto existing = to_objects.find(placement->relative);
    if (existing != to_objects.end()) {
      SPOOL_ASSIGN_OR_RETURN(bool same, SameContent(*source.store, info, *destination.store, existing->second));
      if (same) {
        ++unchanged;
        continue;
      }
    }
    copies.push_back({placement->key, info});
  }
  if (!refused.empty()) {
    if (refused.size() == 1) return Status(refused.front().code(), refused.front().message() + "; nothing was synced");
    for (const Status& status : refused) PrintError(status);
    return InvalidArgumentError(std::to_string(refused.size()) + " objects of " + source.store->Describe(from_prefix) +
                                " cannot be synced (each is named above); nothing was synced");
  }
  std::vector<std::string> extra;
  if (options.delete_extra) {
    for (const auto& [relative, info] : to_objects) {
      // The destination folder's own marker ("" below it) is the folder itself: kept.
      if (!relative.empty() && !placed.contains(relative)) extra.push_back(info.key);
    }
  }
  if (!options.dry_run) {
    for (const std::string& folder : folders) SPOOL_RETURN_IF_ERROR(MakeLocalFolder(folder));
  }

  uint64_t total = 0;
  for (const Copy& copy : copies) total += copy.source.size;
  Progress progress(global, Progress::Unit::kBytes, total);
  TransferOptions transfer;
  transfer.on_progress = [&progress](uint64_t bytes) { progress.Add(bytes); };
  transfer.resume = !options.no_resume;
  transfer.durable = options.fsync;
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
        ObjectEnd from{source.store.get(), copy.source.key, IsLocal(source)};
        ObjectEnd to{destination.store.get(), copy.to_key, IsLocal(destination)};
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
  app->add_flag("--fsync", options->fsync,
                "Make each downloaded file durable (fsync it and its folder) before reporting it copied; "
                "off by default, as in the AWS CLI and rclone (docs/integrity.md)");
  app->footer(
      "Examples:\n"
      "  spool sync ./dataset/ s3://my-bucket/dataset/\n"
      "  spool sync --delete gs://my-bucket/models/ ./models/\n");
  return {app, [options, &global] { return RunSync(*options, global); }};
}

}  // namespace spool::cli
