// spool ckpt save|list|restore|verify|prune|gc ROOT ...
//
// The checkpoint manager from the terminal, so a training script in any
// language can push its checkpoint folder and a person can inspect, check
// and trim what a job saved. ROOT is the folder of the checkpoints
// (s3://bucket/run-7/ckpt); each step lives in ROOT/step-<12 digits>/.
// A job of several ranks saves with --rank R --world-size N from every rank
// (rank 0 commits once every rank's part is there) and restores one rank's
// files with --rank R.
#include <cctype>
#include <memory>

#include "cli/age.h"
#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"
#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/bytes.h"
#include "spool/core/cancel.h"
#include "spool/core/key_fanout.h"

namespace spool::cli {
using checkpoint::CheckpointManager;
using checkpoint::CheckpointManifest;
using checkpoint::CheckpointMetadata;
using checkpoint::CheckpointOptions;
using checkpoint::CheckpointSource;
using checkpoint::CleanupReport;
using checkpoint::ExistingFolder;
using checkpoint::kAllRanks;

namespace {

struct CkptOptions {
  std::string root;
  std::string folder;
  std::optional<int64_t> step;
  int keep = 0;
  std::string older_than = "24h";
  std::vector<std::string> metadata;  // key=value
  std::optional<int> rank;
  int world_size = 1;
  std::string attempt;
  int part_timeout = 600;  // seconds
  int rank_prefix_fanout = 0;
  bool replace = false;    // restore: replace a folder that is not an earlier restore
  bool follow_symlinks = false;
};

Result<std::unique_ptr<CheckpointManager>> OpenManager(const CkptOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(options.root, global));
  CheckpointOptions checkpoint;
  checkpoint.rank = options.rank.value_or(0);
  checkpoint.world_size = options.world_size;
  checkpoint.attempt = options.attempt;
  checkpoint.part_timeout = std::chrono::seconds(options.part_timeout);
  checkpoint.rank_prefix_fanout = options.rank_prefix_fanout;
  // Each invocation saves one step of a job that goes on: other steps'
  // parts may still be waiting for rank 0, so nothing is cleaned at start
  // (`ckpt gc` removes what never committed; --attempt keeps runs apart).
  checkpoint.clean_stale_parts_on_start = false;
  return std::make_unique<CheckpointManager>(location.store, location.key, std::move(checkpoint));
}

std::string ManifestJson(const std::string& root, const CheckpointManifest& manifest) {
  std::string line = "{\"root\":" + JsonString(root) + ",\"step\":" + std::to_string(manifest.step) +
                     ",\"time\":" + JsonString(FormatTimestamp(manifest.wall_time)) +
                     ",\"files\":" + std::to_string(manifest.files.size()) +
                     ",\"bytes\":" + std::to_string(manifest.total_bytes()) +
                     ",\"world_size\":" + std::to_string(manifest.world_size) + ",\"metadata\":{";
  bool first = true;
  for (const auto& [key, value] : manifest.metadata) {
    line += (first ? "" : ",") + JsonString(key) + ":" + JsonString(value);
    first = false;
  }
  return line + "}}";
}

Status RunSave(const CkptOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(auto manager, OpenManager(options, global));
  SPOOL_ASSIGN_OR_RETURN(CheckpointSource source,
                         CheckpointSource::FromFolder(options.folder, options.follow_symlinks
                                                                          ? CheckpointSource::Symlinks::kFollow
                                                                          : CheckpointSource::Symlinks::kInsideFolder));
  if (source.empty()) return InvalidArgumentError(options.folder + " holds no files; nothing to save");
  CheckpointMetadata metadata;
  for (const std::string& pair : options.metadata) {
    size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0) {
      return InvalidArgumentError("--metadata \"" + pair + "\" should be key=value");
    }
    metadata[pair.substr(0, equals)] = pair.substr(equals + 1);
  }
  Result<CheckpointManifest> saved = manager->Save(*options.step, source, std::move(metadata));
  if (!saved.ok() && CancelToken::Current().cancelled()) {
    return CancelledError("step " + std::to_string(*options.step) +
                          " was not committed and its uploaded files were removed; the latest checkpoint is "
                          "unchanged");
  }
  SPOOL_ASSIGN_OR_RETURN(CheckpointManifest manifest, std::move(saved));
  if (global.json) {
    PrintLine(ManifestJson(options.root, manifest));
  } else if (global.quiet) {
    // nothing to print
  } else if (options.world_size > 1 && options.rank.value_or(0) != 0) {
    PrintLine("saved rank " + std::to_string(*options.rank) + "'s part of step " + std::to_string(manifest.step) +
              " (" + std::to_string(manifest.files.size()) + " files, " + FormatBytes(manifest.total_bytes()) +
              "); rank 0 commits the step once every rank's part is there");
  } else if (options.world_size > 1) {
    PrintLine("saved step " + std::to_string(manifest.step) + " of " + std::to_string(manifest.world_size) +
              " ranks (" + std::to_string(manifest.files.size()) + " files, " + FormatBytes(manifest.total_bytes()) +
              ") to " + manager->store().Describe(manager->layout().StepPrefix(manifest.step)));
  } else {
    PrintLine("saved step " + std::to_string(manifest.step) + " (" + std::to_string(manifest.files.size()) + " files, " +
              FormatBytes(manifest.total_bytes()) + ") to " + manager->store().Describe(manager->layout().StepPrefix(manifest.step)));
  }
  return OkStatus();
}

Status RunList(const CkptOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(auto manager, OpenManager(options, global));
  SPOOL_ASSIGN_OR_RETURN(std::vector<CheckpointManifest> manifests, manager->List());
  if (manifests.empty() && !global.json && !global.quiet) {
    PrintLine("no committed checkpoint under " + options.root);
  }
  for (const CheckpointManifest& manifest : manifests) {
    if (global.json) {
      PrintLine(ManifestJson(options.root, manifest));
      continue;
    }
    char line[200];
    std::snprintf(line, sizeof(line), "step %12lld  %s  %5d ranks  %5zu files  %10s",
                  static_cast<long long>(manifest.step), FormatTimestamp(manifest.wall_time).c_str(),
                  manifest.world_size, manifest.files.size(), FormatBytes(manifest.total_bytes()).c_str());
    PrintLine(line);
  }
  return OkStatus();
}

Result<int64_t> StepOrLatest(CheckpointManager& manager, const CkptOptions& options) {
  if (options.step) return *options.step;
  SPOOL_ASSIGN_OR_RETURN(std::optional<int64_t> latest, manager.Latest());
  if (!latest) return NotFoundError("no committed checkpoint under " + options.root);
  return *latest;
}

Status RunRestore(const CkptOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(auto manager, OpenManager(options, global));
  SPOOL_ASSIGN_OR_RETURN(int64_t step, StepOrLatest(*manager, options));
  // Default: everything (each rank's files under rank-<R>/ for a checkpoint
  // of several ranks); --rank R: that rank's files only.
  Result<CheckpointManifest> restored =
      manager->RestoreRank(step, options.rank.value_or(kAllRanks), options.folder,
                           options.replace ? ExistingFolder::kReplace : ExistingFolder::kReplaceOnlyRestores);
  if (!restored.ok() && CancelToken::Current().cancelled()) {
    return CancelledError("step " + std::to_string(step) + " was not restored; " + options.folder +
                          " was left as it was");
  }
  SPOOL_ASSIGN_OR_RETURN(CheckpointManifest manifest, std::move(restored));
  if (global.json) {
    PrintLine(ManifestJson(options.root, manifest));
  } else if (!global.quiet) {
    PrintLine("restored step " + std::to_string(step) + " (" + std::to_string(manifest.files.size()) + " files, " +
              FormatBytes(manifest.total_bytes()) + ") into " + options.folder);
  }
  return OkStatus();
}

Status RunVerify(const CkptOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(auto manager, OpenManager(options, global));
  std::vector<int64_t> steps;
  if (options.step) {
    steps.push_back(*options.step);
  } else {
    SPOOL_ASSIGN_OR_RETURN(std::vector<CheckpointManifest> manifests, manager->List());
    if (manifests.empty()) return NotFoundError("no committed checkpoint under " + options.root);
    for (const auto& manifest : manifests) steps.push_back(manifest.step);
  }
  Status first_damage;
  size_t damaged = 0;
  for (int64_t step : steps) {
    Status verified = manager->Verify(step);
    if (!verified.ok() && verified.code() != StatusCode::kDataLoss) return verified;
    if (!verified.ok() && ++damaged == 1) first_damage = verified;
    if (global.json) {
      PrintLine("{\"step\":" + std::to_string(step) + ",\"ok\":" + (verified.ok() ? "true" : "false") +
                (verified.ok() ? "" : ",\"error\":" + JsonString(verified.message())) + "}");
    } else if (!verified.ok()) {
      PrintLine("DAMAGED step " + std::to_string(step) + ": " + verified.message());
    } else if (!global.quiet) {
      PrintLine("ok step " + std::to_string(step) + ": every file of every rank matches its size and crc32c");
    }
  }
  if (damaged > 0) {
    return DataLossError(std::to_string(damaged) + " of " + std::to_string(steps.size()) +
                         " checkpoints are damaged; first: " + first_damage.message());
  }
  return OkStatus();
}

Status RunPrune(const CkptOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(auto manager, OpenManager(options, global));
  SPOOL_ASSIGN_OR_RETURN(std::vector<int64_t> deleted, manager->Prune(options.keep));
  for (int64_t step : deleted) {
    if (global.json) {
      PrintLine("{\"deleted_step\":" + std::to_string(step) + "}");
    } else if (!global.quiet) {
      PrintLine("deleted step " + std::to_string(step));
    }
  }
  if (deleted.empty() && !global.json && !global.quiet) PrintLine("nothing to prune");
  return OkStatus();
}

Status RunGc(const CkptOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(std::chrono::seconds age, ParseAge("--older-than", options.older_than));
  SPOOL_ASSIGN_OR_RETURN(auto manager, OpenManager(options, global));
  SPOOL_ASSIGN_OR_RETURN(CleanupReport report, manager->Cleanup(age));
  for (int64_t step : report.partial_steps_deleted) {
    if (global.json) {
      PrintLine("{\"deleted_partial_step\":" + std::to_string(step) + "}");
    } else if (!global.quiet) {
      PrintLine("deleted partial step " + std::to_string(step));
    }
  }
  for (const IncompleteUpload& upload : report.uploads_aborted) {
    if (global.json) {
      PrintLine("{\"aborted_upload\":" + JsonString(manager->store().Describe(upload.key)) + "}");
    } else if (!global.quiet) {
      PrintLine("aborted the incomplete upload of " + manager->store().Describe(upload.key));
    }
  }
  if (!global.json && !global.quiet) {
    PrintLine(std::to_string(report.partial_steps_deleted.size()) + " partial checkpoints, " +
              std::to_string(report.objects_deleted) + " objects deleted, " +
              std::to_string(report.uploads_aborted.size()) + " incomplete uploads aborted");
  }
  return OkStatus();
}

void AddRoot(CLI::App* app, CkptOptions& options) {
  app->add_option("root", options.root, "Where the checkpoints live: s3://bucket/run/ckpt, gs://..., a folder")
      ->required();
}

}  // namespace

Command AddCkptCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<CkptOptions>();
  CLI::App* app = spool.add_subcommand("ckpt", "Save, list, restore, verify and prune checkpoints");
  app->require_subcommand(1);
  app->footer("Example: spool ckpt list s3://my-bucket/run-7/ckpt\n");

  auto* save = app->add_subcommand("save", "Upload a folder as checkpoint step N (committed by its manifest, last)");
  AddRoot(save, *options);
  save->add_option("--step", options->step, "The training step")->required();
  save->add_option("folder", options->folder, "The local folder to save")->required();
  save->add_option("--metadata", options->metadata, "key=value stored in the manifest (repeatable)");
  save->add_option("--rank", options->rank, "This process's rank, with --world-size")->check(CLI::NonNegativeNumber);
  save->add_option("--world-size", options->world_size,
                   "How many ranks save this step; each runs this command with its --rank, rank 0 commits")
      ->check(CLI::PositiveNumber);
  save->add_option("--attempt", options->attempt,
                   "Which run of the job (the same on every rank); parts of another attempt are never committed");
  save->add_option("--part-timeout", options->part_timeout,
                   "Seconds rank 0 waits for the other ranks' parts (default 600)")
      ->check(CLI::PositiveNumber);
  save->add_option("--rank-prefix-fanout", options->rank_prefix_fanout,
                   "Store each rank's files under one of N key prefixes (the same N on every rank); restore, "
                   "verify and gc need no option (docs/performance.md)")
      ->check(CLI::Range(1, kMaxPrefixFanout));
  save->add_flag("--follow-symlinks", options->follow_symlinks,
                 "Save what every symbolic link in the folder points to, files and folders, wherever they are "
                 "(by default only links to files inside the folder are saved; any other link is an error)");
  save->footer("Example: spool ckpt save s3://my-bucket/run-7/ckpt --step 1200 ./checkpoints/\n"
               "         spool ckpt save s3://my-bucket/run-7/ckpt --step 1200 --rank 3 --world-size 8 ./ckpt-rank3/\n");

  auto* list = app->add_subcommand("list", "List committed checkpoints, oldest first");
  AddRoot(list, *options);
  list->footer("Example: spool ckpt list --json gs://my-bucket/run-7/ckpt\n");

  auto* restore = app->add_subcommand("restore", "Download a checkpoint (default: the latest) into a folder");
  AddRoot(restore, *options);
  restore->add_option("folder", options->folder,
                      "Made from the checkpoint's files, in place only once every file arrived intact. A folder "
                      "that exists is replaced whole, so it must be empty or an earlier restore of this root "
                      "(unless --replace)")
      ->required();
  restore->add_flag("--replace", options->replace,
                    "Replace the folder whole even when it holds other files (they are deleted)");
  restore->add_option("--step", options->step, "The step to restore (default: the latest committed)");
  restore->add_option("--rank", options->rank,
                      "Only this rank's files (default: everything, each rank's under rank-<5 digits>/)")
      ->check(CLI::NonNegativeNumber);
  restore->footer("Example: spool ckpt restore s3://my-bucket/run-7/ckpt ./checkpoints/\n");

  auto* verify = app->add_subcommand("verify", "Read checkpoints back and check every file's size and crc32c");
  AddRoot(verify, *options);
  verify->add_option("--step", options->step, "Only this step (default: every committed checkpoint)");
  verify->footer("Example: spool ckpt verify s3://my-bucket/run-7/ckpt --step 1200\n");

  auto* prune = app->add_subcommand("prune", "Delete all but the newest N committed checkpoints");
  AddRoot(prune, *options);
  prune->add_option("--keep", options->keep, "How many of the newest to keep")->required()->check(CLI::PositiveNumber);
  prune->footer("Example: spool ckpt prune s3://my-bucket/run-7/ckpt --keep 3\n");

  auto* gc = app->add_subcommand("gc", "Delete partial checkpoints (no manifest: files and rank parts) left by crashed saves");
  AddRoot(gc, *options);
  gc->add_option("--older-than", options->older_than, "Only those untouched for this long: 90s, 15m, 1h, 7d (default 24h)");
  gc->footer("Example: spool ckpt gc s3://my-bucket/run-7/ckpt --older-than 1h\n");

  return {app, [=, &global]() -> Status {
            if (save->parsed()) {
              if (options->rank && *options->rank >= options->world_size) {
                return InvalidArgumentError("--rank " + std::to_string(*options->rank) + " is not below --world-size " +
                                            std::to_string(options->world_size));
              }
              return RunSave(*options, global);
            }
            if (list->parsed()) return RunList(*options, global);
            if (restore->parsed()) return RunRestore(*options, global);
            if (verify->parsed()) return RunVerify(*options, global);
            if (prune->parsed()) return RunPrune(*options, global);
            return RunGc(*options, global);
          }};
}

}  // namespace spool::cli
