// Finding, checking and deleting checkpoints: everything is decided from the
// manifests; the LATEST hint only saves work when it checks out.
#include <algorithm>
#include <charconv>
#include <memory>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/checkpoint/stats.h"
#include "spool/core/parallel_for.h"
#include "spool/core/crc32c.h"
#include "spool/core/log.h"

namespace spool::checkpoint {

Result<std::vector<int64_t>> CheckpointManager::ListSteps() {
  ListOptions options;
  options.prefix = layout_.ListPrefix();
  options.delimiter.push_back('/');  // (not = "/": GCC 12 -Wrestrict false positive)
  SPOOL_ASSIGN_OR_RETURN(ListPage page, ListAll(*store_, options));
  std::vector<int64_t> steps;
  for (const std::string& prefix : page.common_prefixes) {
    if (auto step = layout_.ParseStepPrefix(prefix)) steps.push_back(*step);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

Result<bool> CheckpointManager::IsCommitted(int64_t step) {
  Result<ObjectInfo> info = store_->Stat(layout_.ManifestKey(step));
  if (info.ok()) return true;
  if (info.status().code() == StatusCode::kNotFound) return false;
  return info.status();
}

Result<std::optional<int64_t>> CheckpointManager::Latest() {
  SPOOL_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ListSteps());
  // The hint, when its manifest exists, bounds the search: only newer steps
  // need a look. A missing, unreadable or lying hint is simply ignored.
  std::optional<int64_t> floor;
  if (Result<std::string> hint = ReadAll(*store_, layout_.LatestHintKey()); hint.ok()) {
    int64_t step = -1;
    auto [end, error] = std::from_chars(hint->data(), hint->data() + hint->size(), step);
    if (error == std::errc() && step >= 0 && std::binary_search(steps.begin(), steps.end(), step)) {
      Result<bool> committed = IsCommitted(step);
      if (committed.ok() && *committed) floor = step;
    }
  }
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (floor && *it <= *floor) return floor;
    SPOOL_ASSIGN_OR_RETURN(bool committed, IsCommitted(*it));
    if (committed) return std::optional<int64_t>(*it);
  }
  return std::optional<int64_t>();
}

Result<CheckpointManifest> CheckpointManager::ReadManifest(int64_t step) {
  const std::string key = layout_.ManifestKey(step);
  Result<std::string> json = ReadAll(*store_, key);
  if (!json.ok()) {
    if (json.status().code() == StatusCode::kNotFound) {
      return NotFoundError("checkpoint step " + std::to_string(step) + " does not exist (no " + Url(key) + ")");
    }
    return json.status();
  }
  SPOOL_ASSIGN_OR_RETURN(CheckpointManifest manifest, DecodeManifest(*json, Url(key)));
  if (manifest.step != step) {
    return DataLossError(Url(key) + " describes step " + std::to_string(manifest.step) + ", not step " +
                         std::to_string(step) + "; the checkpoint folder was copied or renamed by hand");
  }
  return manifest;
}

Result<std::vector<CheckpointManifest>> CheckpointManager::List() {
  SPOOL_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ListSteps());
  std::vector<std::optional<CheckpointManifest>> found(steps.size());
  SPOOL_RETURN_IF_ERROR(ParallelFor(executor(), steps.size(), options_.file_concurrency, [&](size_t i) -> Status {
    Result<CheckpointManifest> manifest = ReadManifest(steps[i]);
    if (manifest.ok()) {
      found[i] = std::move(*manifest);
      return OkStatus();
    }
    if (manifest.status().code() == StatusCode::kNotFound) return OkStatus();  // partial: not a checkpoint
    // A manifest that does not parse or lists unsafe paths: that step is
    // broken (Restore reports why); the others are still listed.
    if (manifest.status().code() == StatusCode::kDataLoss ||
        manifest.status().code() == StatusCode::kInvalidArgument) {
      log::Write(log::Level::kInfo, "checkpoint", "ignoring " + manifest.status().ToString());
      return OkStatus();
    }
    return manifest.status();
  }));
  std::vector<CheckpointManifest> manifests;
  for (auto& manifest : found) {
    if (manifest) manifests.push_back(std::move(*manifest));
  }
  return manifests;
}

// The manifest goes first, so the step stops existing at once; a crash
// halfway leaves a partial step for Cleanup().
Status CheckpointManager::DeleteStep(int64_t step) {
  SPOOL_RETURN_IF_ERROR(store_->Delete(layout_.ManifestKey(step)));
  ListOptions options;
  options.prefix = layout_.StepPrefix(step);
  SPOOL_ASSIGN_OR_RETURN(ListPage page, ListAll(*store_, options));
  std::vector<std::string> keys;
  for (const ObjectInfo& object : page.objects) keys.push_back(object.key);
  if (keys.empty()) return OkStatus();
  SPOOL_ASSIGN_OR_RETURN(std::vector<DeleteFailure> failures, store_->DeleteMany(keys));
  if (!failures.empty()) {
    return failures.front().status.WithContext("deleting checkpoint step " + std::to_string(step) + " (" +
                                               std::to_string(failures.size()) + " objects left)");
  }
  return OkStatus();
}

Result<std::vector<int64_t>> CheckpointManager::Prune(int keep_last) {
  if (keep_last < 0) return InvalidArgumentError("Prune(keep_last) needs keep_last >= 0");
  std::lock_guard save_lock(save_mu_);  // never delete under a save
  SPOOL_ASSIGN_OR_RETURN(std::vector<CheckpointManifest> committed, List());
  std::vector<int64_t> deleted;
  const size_t keep = static_cast<size_t>(keep_last);
  for (size_t i = 0; i + keep < committed.size(); ++i) {
    SPOOL_RETURN_IF_ERROR(DeleteStep(committed[i].step));
    deleted.push_back(committed[i].step);
  }
  return deleted;
}

Result<CleanupReport> CheckpointManager::Cleanup(std::chrono::seconds older_than) {
  std::lock_guard save_lock(save_mu_);  // this process's own save is never partial garbage
  const auto cutoff = WallNow() - older_than;
  SPOOL_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ListSteps());
  CleanupReport report;
  for (int64_t step : steps) {
    SPOOL_ASSIGN_OR_RETURN(bool committed, IsCommitted(step));
    if (committed) continue;
    ListOptions options;
    options.prefix = layout_.StepPrefix(step);
    SPOOL_ASSIGN_OR_RETURN(ListPage page, ListAll(*store_, options));
    // Another process may still be uploading: only the newest object's age counts.
    std::vector<std::string> keys;
    bool recent = false;
    for (const ObjectInfo& object : page.objects) {
      recent = recent || object.updated > cutoff;
      keys.push_back(object.key);
    }
    if (recent || keys.empty()) continue;
    // Re-check right before deleting: a writer may have committed meanwhile.
    SPOOL_ASSIGN_OR_RETURN(committed, IsCommitted(step));
    if (committed) continue;
    SPOOL_ASSIGN_OR_RETURN(std::vector<DeleteFailure> failures, store_->DeleteMany(keys));
    if (!failures.empty()) {
      return failures.front().status.WithContext("cleaning up partial checkpoint step " + std::to_string(step));
    }
    report.partial_steps_deleted.push_back(step);
    report.objects_deleted += keys.size();
  }
  // The uploads of files a killed save never finished are not objects, so the
  // listing above misses them; they are aborted by the same age rule.
  SPOOL_ASSIGN_OR_RETURN(report.uploads_aborted, AbortIncompleteUploads(*store_, layout_.ListPrefix(), older_than));
  return report;
}

Status CheckpointManager::CheckFile(int64_t step, const CheckpointFile& file, uint64_t size, uint32_t crc,
                                    std::string_view what) {
  const std::string name = "checkpoint step " + std::to_string(step) + " file '" + file.path + "' (" +
                           Url(layout_.FileKey(step, file.object_path())) + ")";
  if (size != file.size) {
    return DataLossError(name + ": " + std::string(what) + " " + std::to_string(size) + " bytes, the manifest says " +
                         std::to_string(file.size) + "; the checkpoint is corrupt, restore another step");
  }
  if (crc != file.crc32c) {
    return DataLossError(name + ": " + std::string(what) + " crc32c " + FormatCrc32c(crc) + ", the manifest says " +
                         FormatCrc32c(file.crc32c) + "; the checkpoint is corrupt, restore another step");
  }
  return OkStatus();
}

Status CheckpointManager::Verify(int64_t step) {
  internal::ScopedTimer timer(stats_->verify);
  SPOOL_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifest(step));
  const uint64_t chunk_size = std::max<uint64_t>(options_.chunk_size, 4096);
  return ParallelFor(executor(), manifest.files.size(), options_.file_concurrency, [&](size_t i) -> Status {
    const CheckpointFile& file = manifest.files[i];
    SPOOL_ASSIGN_OR_RETURN(auto object, store_->OpenRead(layout_.FileKey(step, file.object_path())));
    ByteBudget::Lease lease(&budget(), std::min<uint64_t>(chunk_size, std::max<uint64_t>(object->info().size, 1)));
    std::unique_ptr<char[]> buffer(new char[lease.bytes()]);
    uint64_t offset = 0;
    uint32_t crc = 0;
    while (offset < object->info().size) {
      SPOOL_ASSIGN_OR_RETURN(size_t got, object->ReadAt(offset, std::span<char>(buffer.get(), lease.bytes())));
      if (got == 0) break;
      crc = crc32c::Extend(crc, buffer.get(), got);
      offset += got;
    }
    return CheckFile(step, file, offset, crc, "holds");
  });
}

}  // namespace spool::checkpoint
