// Saving a checkpoint from several ranks: each rank uploads its files under
// its rank folder and writes its part manifest; rank 0 gathers the parts of
// its attempt (one LIST per poll, one GET per part) and commits.
#include <algorithm>
#include <cstdlib>
#include <random>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/checkpoint/stats.h"
#include "spool/core/cancel.h"
#include "spool/core/env.h"
#include "spool/core/key_fanout.h"
#include "spool/core/log.h"
#include "spool/core/parallel_for.h"
#include "spool/core/retry.h"

namespace spool::checkpoint {

namespace {

// How rank 0 polls for parts: backoff from 50 ms to 500 ms with full jitter,
// so a part that arrives late costs at most 4 LISTs a second on average, and
// the commit follows the last part by 250 ms on average (2 s, the earlier
// cap, left rank 0 idle for a second on average after the last part: a
// twentieth of a 16-rank save under throttling).
RetryPolicy PartPollPolicy() {
  RetryPolicy policy;
  policy.initial_backoff = std::chrono::milliseconds(50);
  policy.max_backoff = std::chrono::milliseconds(500);
  return policy;
}

double Uniform01() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
}

// A rank's file (paths relative to its stored rank folder) as the step's
// manifest lists it: both paths relative to the step folder; `path` under
// "rank-00003/", the object under layout.RankStoredFolder(rank).
CheckpointFile InRankFolder(const CheckpointLayout& layout, int rank, const CheckpointFile& file) {
  const std::string folder = CheckpointLayout::RankFolder(rank);
  const std::string stored_folder = layout.RankStoredFolder(rank);
  const bool stored_elsewhere = !file.stored_path.empty() || stored_folder != folder;
  return {folder + "/" + file.path, file.size, file.crc32c,
          stored_elsewhere ? stored_folder + "/" + file.object_path() : ""};
}

// "1, 3" from {1, 3}.
std::string JoinRanks(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

}  // namespace

std::string LauncherAttempt() {
  const Env env = CurrentEnv();
  auto run_id = env.Get("TORCHELASTIC_RUN_ID");
  auto restarts = env.Get("TORCHELASTIC_RESTART_COUNT");
  if (!run_id || !restarts) return {};
  return *run_id + "-" + *restarts;
}

Status CheckpointManager::Start() {
  std::lock_guard save_lock(save_mu_);
  return StartLocked();
}

Status CheckpointManager::StartLocked() {
  if (!multi_rank() || started_) return OkStatus();
  if (options_.rank < 0 || options_.rank >= options_.world_size) {
    return InvalidArgumentError("checkpoint rank " + std::to_string(options_.rank) + " is not in [0, " +
                                std::to_string(options_.world_size) + ")");
  }
  if (options_.rank_prefix_fanout < 0 || options_.rank_prefix_fanout > kMaxPrefixFanout) {
    return InvalidArgumentError("rank_prefix_fanout must be 0 (no fan-out) or 1.." + std::to_string(kMaxPrefixFanout) +
                                ", not " + std::to_string(options_.rank_prefix_fanout));
  }
  if (options_.clean_stale_parts_on_start) {
    // This rank's parts of steps that never committed are an earlier run's:
    // none of this run's saves has started yet.
    SPOOL_ASSIGN_OR_RETURN(std::optional<int64_t> latest, Latest());
    SPOOL_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ListSteps());
    for (int64_t step : steps) {
      if (!latest || step > *latest) RemoveOwnPart(step);
    }
    if (options_.rank == 0 && attempt_.empty()) {
      // Without an attempt to tell runs apart, the store's own clock does:
      // parts written before this marker are an earlier run's.
      const std::string key = layout_.CommitterMarkerKey();
      SPOOL_RETURN_IF_ERROR(WriteAll(*store_, key, "rank 0 started\n").status().WithContext("starting rank 0"));
      SPOOL_ASSIGN_OR_RETURN(ObjectInfo marker, store_->Stat(key));
      committer_since_ = marker.updated;
    }
  }
  started_ = true;
  return OkStatus();
}

// Removes this rank's files and part of an uncommitted step (best effort).
void CheckpointManager::RemoveOwnPart(int64_t step) {
  CancelScope cleanup(CancelToken::Process());
  Result<bool> committed = IsCommitted(step);
  if (!committed.ok() || *committed) return;
  ListOptions options;
  options.prefix = layout_.RankPrefix(step, options_.rank);
  std::vector<std::string> keys{layout_.PartKey(step, options_.rank)};  // the part first: it vouches for the files
  if (Result<ListPage> page = ListAll(*store_, options); page.ok()) {
    for (const ObjectInfo& object : page->objects) keys.push_back(object.key);
  }
  store_->Delete(keys.front()).IgnoreError();
  keys.erase(keys.begin());
  if (!keys.empty()) store_->DeleteMany(keys).status().IgnoreError();
}

Result<CheckpointManifest> CheckpointManager::SaveRankLocked(int64_t step, const CheckpointSource& source,
                                                             CheckpointMetadata metadata, int file_concurrency,
                                                             bool retention) {
  const int rank = options_.rank;
  const int world = options_.world_size;
  const std::string where = "checkpoint step " + std::to_string(step) + " rank " + std::to_string(rank) + " of " +
                            std::to_string(world) + " at " + Url(layout_.RankPrefix(step, rank));

  // This rank's files and part. Every rank reaches the barrier below exactly
  // once, whether this succeeded or not, so no rank waits for a failed one.
  Result<CheckpointPart> own = [&]() -> Result<CheckpointPart> {
    SPOOL_RETURN_IF_ERROR(StartLocked());
    SPOOL_ASSIGN_OR_RETURN(bool committed, IsCommitted(step));
    if (committed) {
      return AlreadyExistsError(where + ": the step is already committed; checkpoints are immutable");
    }
    const auto& entries = source.entries();
    CheckpointPart part;
    part.step = step;
    part.world_size = world;
    part.part.rank = rank;
    part.part.attempt = attempt_;
    part.part.metadata = std::move(metadata);
    part.part.files.resize(entries.size());
    // Under this save's own folder in the rank's folder, as a single
    // writer's save (save.cc): another job's rank saving the same step
    // cannot overwrite what this part lists.
    const std::string save_folder = CheckpointLayout::SaveFolder(SaveIdOf(step, source));
    Status uploaded = [&] {
      internal::ScopedTimer timer(stats_->upload);
      return ParallelFor(executor(), entries.size(), file_concurrency, [&](size_t i) -> Status {
        const std::string stored_path = save_folder + entries[i].path;
        SPOOL_ASSIGN_OR_RETURN(part.part.files[i],
                               UploadEntry(layout_.RankPrefix(step, rank) + stored_path, entries[i]));
        part.part.files[i].stored_path = stored_path;
        return OkStatus();
      });
    }();
    if (uploaded.ok()) uploaded = CancelToken::Current().Check("saving " + where);
    if (uploaded.ok()) {
      part.wall_time = WallNow();
      Result<std::string> json = EncodePart(part);
      uploaded = json.ok() ? WriteAll(*store_, layout_.PartKey(step, rank), *json).status() : json.status();
    }
    if (!uploaded.ok()) {
      RemoveOwnPart(step);
      return uploaded;
    }
    return part;
  }();
  Status barrier = options_.barrier ? options_.barrier() : OkStatus();
  if (!own.ok()) return own.status().WithContext("saving " + where + " failed, nothing was committed");
  if (!barrier.ok()) {
    if (rank == 0) RemoveOwnPart(step);
    return barrier.WithContext("the barrier after saving " + where);
  }

  CheckpointManifest manifest;
  manifest.format_version = kMultiRankManifestFormatVersion;
  manifest.step = step;
  manifest.world_size = world;
  if (rank != 0) {
    // Committed later by rank 0, once every part is there.
    manifest.wall_time = own->wall_time;
    for (const CheckpointFile& file : own->part.files) manifest.files.push_back(InRankFolder(layout_, rank, file));
    manifest.metadata = own->part.metadata;
    manifest.ranks.push_back(std::move(own->part));
    return manifest;
  }

  internal::ScopedTimer commit_timer(stats_->commit);
  Result<std::vector<CheckpointRankPart>> parts = WaitForParts(step);
  Status gathered = parts.ok() ? CheckPartFiles(step, *parts) : parts.status();
  if (gathered.ok()) gathered = CancelToken::Current().Check("committing checkpoint step " + std::to_string(step));
  if (!gathered.ok()) {
    RemoveOwnPart(step);
    return gathered.WithContext("committing checkpoint step " + std::to_string(step) + " at " +
                                Url(layout_.StepPrefix(step)) + " failed, nothing was committed");
  }
  manifest.wall_time = WallNow();
  for (const CheckpointRankPart& part : *parts) {
    for (const CheckpointFile& file : part.files) manifest.files.push_back(InRankFolder(layout_, part.rank, file));
  }
  manifest.metadata = parts->front().metadata;
  manifest.ranks = std::move(*parts);
  SPOOL_ASSIGN_OR_RETURN(std::string json, EncodeManifest(manifest));
  CancelScope commit_scope(CancelToken::Process());  // a started commit completes
  Status commit = CommitManifest(step, json);
  if (!commit.ok()) return commit.WithContext("committing checkpoint step " + std::to_string(step));
  if (options_.write_latest_hint) WriteLatestHint(step);
  if (retention) ApplyRetention();
  return manifest;
}

// Reads the parts that appeared (or changed) since the last poll and keeps
// those of this attempt. One LIST page per 1,000 ranks, one GET per new part
// (read as listed, without a HEAD).
Status CheckpointManager::ReadNewParts(int64_t step, std::map<int, CheckpointRankPart>& accepted,
                                       std::map<int, std::string>& seen) {
  ListOptions options;
  options.prefix = layout_.PartsPrefix(step);
  SPOOL_ASSIGN_OR_RETURN(ListPage page, ListAll(*store_, options));
  for (const ObjectInfo& object : page.objects) {
    std::optional<int> rank = layout_.ParsePartKey(step, object.key);
    if (!rank || *rank >= options_.world_size || accepted.count(*rank)) continue;
    const std::string version = object.version + "@" + std::to_string(object.updated.time_since_epoch().count());
    if (auto it = seen.find(*rank); it != seen.end() && it->second == version) continue;  // rejected already
    seen[*rank] = version;
    auto reject = [&](const std::string& why) {
      log::Write(log::Level::kInfo, "checkpoint", "ignoring " + Url(object.key) + ": " + why);
    };
    if (committer_since_ && object.updated < *committer_since_) {
      reject("written before rank 0 started (" + Url(layout_.CommitterMarkerKey()) + "), by an earlier run");
      continue;
    }
    // Read as listed: no HEAD per part. Gone, or changed since the listing
    // (412 to the read's If-Match): its rank is replacing it, and the next
    // poll reads the new one. Any other error is the poll's.
    Result<std::string> json = ReadAll(*store_, object);
    if (!json.ok() && (json.status().code() == StatusCode::kNotFound || json.status().remote().http_status == 412)) {
      seen.erase(*rank);
      continue;
    }
    if (!json.ok()) return json.status();
    Result<CheckpointPart> part = DecodePart(*json, Url(object.key));
    if (!part.ok()) {
      reject(part.status().ToString());
      continue;
    }
    if (part->step != step || part->world_size != options_.world_size || part->part.rank != *rank) {
      reject("it is rank " + std::to_string(part->part.rank) + " of " + std::to_string(part->world_size) +
             " at step " + std::to_string(part->step) + ", expected rank " + std::to_string(*rank) + " of " +
             std::to_string(options_.world_size) + " at step " + std::to_string(step));
      continue;
    }
    if (part->part.attempt != attempt_) {
      reject("it was written by attempt '" + part->part.attempt + "', this is attempt '" + attempt_ + "'");
      continue;
    }
    accepted[*rank] = std::move(part->part);
  }
  return OkStatus();
}

Result<std::vector<CheckpointRankPart>> CheckpointManager::WaitForParts(int64_t step) {
  const int world = options_.world_size;
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + options_.part_timeout;
  const RetryPolicy poll = PartPollPolicy();
  std::map<int, CheckpointRankPart> accepted;
  std::map<int, std::string> seen;
  auto missing = [&] {
    std::vector<int> ranks;
    for (int rank = 0; rank < world; ++rank) {
      if (!accepted.count(rank)) ranks.push_back(rank);
    }
    return (ranks.size() == 1 ? "rank " : "ranks ") + JoinRanks(ranks) + " of " + std::to_string(world);
  };
  for (int polls = 1;; ++polls) {
    SPOOL_RETURN_IF_ERROR(ReadNewParts(step, accepted, seen));
    if (static_cast<int>(accepted.size()) == world) break;
    if (options_.barrier) {
      return FailedPreconditionError("step " + std::to_string(step) + ": " + missing() +
                                     " wrote no part of attempt '" + attempt_ + "' before the barrier (their saves "
                                     "failed)");
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return DeadlineExceededError("step " + std::to_string(step) + ": " + missing() +
                                   " did not finish their part within " +
                                   std::to_string(options_.part_timeout.count()) + " s");
    }
    auto delay = std::min(BackoffDelay(poll, polls, Uniform01()),
                          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                              std::chrono::milliseconds(1));
    if (!CancelToken::Current().SleepFor(delay)) {
      return CancelToken::Current().Check("waiting for the parts of checkpoint step " + std::to_string(step) +
                                          " (" + missing() + " missing)");
    }
  }
  std::vector<CheckpointRankPart> parts;
  for (auto& [rank, part] : accepted) parts.push_back(std::move(part));
  return parts;
}

// Every file a part lists is in the store with its size: one listing of the
// step (one LIST page per 1,000 objects), not a HEAD per file. Each rank
// confirmed its own uploads' checksums before writing its part.
Status CheckpointManager::CheckPartFiles(int64_t step, const std::vector<CheckpointRankPart>& parts) {
  ListOptions options;
  options.prefix = layout_.StepPrefix(step);
  SPOOL_ASSIGN_OR_RETURN(ListPage page, ListAll(*store_, options));
  std::map<std::string, uint64_t> sizes;
  for (const ObjectInfo& object : page.objects) sizes[object.key] = object.size;
  for (const CheckpointRankPart& part : parts) {
    for (const CheckpointFile& file : part.files) {
      const std::string key = layout_.RankPrefix(step, part.rank) + file.object_path();
      auto found = sizes.find(key);
      if (found == sizes.end() || found->second != file.size) {
        return DataLossError("rank " + std::to_string(part.rank) + "'s part lists " + Url(key) + " with " +
                             std::to_string(file.size) + " bytes, but the store " +
                             (found == sizes.end() ? std::string("does not have it")
                                                   : "holds " + std::to_string(found->second) + " bytes"));
      }
    }
  }
  return OkStatus();
}

}  // namespace spool::checkpoint
