// CheckpointManager: saves a training job's checkpoints to any ObjectStore
// and restores the latest complete one after a restart.
//
// Layout and commit protocol (see layout.h and docs/checkpoints.md): the files
// of step N go under <root>/step-<N, 12 digits>/, each uploaded and its
// checksum confirmed, and only then MANIFEST.json is written, create-only. A
// step without a manifest does not exist: Latest(), List() and Restore()
// never see it, and Cleanup() deletes it once it is old enough. No rename on
// the store anywhere.
//
//   auto manager = CheckpointManager::Open("s3://bucket/run-7/ckpt", options);
//   if (auto latest = (*manager)->Latest(); latest.ok() && *latest)
//     (*manager)->Restore(**latest, "/scratch/ckpt");
//   ...
//   if ((*manager)->ShouldSave(step))
//     (*manager)->SaveAsync(step, *CheckpointSource::FromFolder("/scratch/ckpt"), {{"loader", state}});
//   ...
//   (*manager)->Wait();
//
// Threading: every method may be called from any thread. Saves are
// serialised: at most one (synchronous or background) runs at a time. The
// work of a save or restore runs on the executor of the options (default:
// DefaultExecutor()), files in parallel, buffers bounded by the byte budget.
// Lifetime: the destructor cancels a background save still in flight (its
// requests stop within about a second, nothing is committed, the step stays
// invisible) and waits for it; call Wait() first to keep it. Saves and
// restores run under the caller's CancelToken (core/cancel.h): a cancelled
// save never commits, a cancelled restore leaves the folder as it was.
//
// Several ranks (world_size > 1 in the options): every rank saves the same
// step; each uploads its files under step-<N>/rank-<R>/ and then writes its
// part manifest; rank 0 (the committer) waits until every rank's part of the
// same attempt is there and its files are listed, then writes MANIFEST.json
// (format_version 2) create-only. Until then the step does not exist. Rank
// 0's SaveAsync waits for the parts on a thread of its own (never a pool
// thread); do not call rank 0's synchronous Save from an executor task. See
// docs/checkpoints.md, "Several ranks".
//
// Preemption: SaveBeforeDeadline saves one step ahead of everything else and
// says whether it committed in time (see checkpoint/preemption.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/checkpoint/layout.h"
#include "spool/checkpoint/manifest.h"
#include "spool/checkpoint/policy.h"
#include "spool/checkpoint/source.h"
#include "spool/core/cancel.h"
#include "spool/core/executor.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/core/storage/registry.h"
#include "spool/metrics/registry.h"

namespace spool::checkpoint {

using CheckpointMetadata = std::map<std::string, std::string>;

struct CheckpointOptions {
  SavePolicy save;            // for ShouldSave()
  RetentionPolicy retention;  // applied after each committed save

  // What SaveAsync does while a background save is still running.
  enum class WhenBusy {
    kWait,  // wait for it to finish, then start the new save
    kSkip,  // return at once without saving
  };
  WhenBusy when_busy = WhenBusy::kWait;
  // SaveAsync captures source files by hard link (copy where that fails);
  // true copies always (for trainers that rewrite files in place).
  bool copy_on_capture = false;
  // Where SaveAsync stages captured files. Empty: a hidden folder beside the
  // source folder, or beside the first source file (same filesystem, so hard
  // links work).
  std::filesystem::path staging_dir;

  // Write <root>/LATEST after each commit. Only a hint: Latest() checks it.
  bool write_latest_hint = true;

  Executor* executor = nullptr;  // default: DefaultExecutor()
  ByteBudget* budget = nullptr;  // default: DefaultByteBudget()
  // Files uploaded / downloaded at once; each moves its own parts in
  // parallel inside the backend, on the same executor.
  int file_concurrency = 4;
  uint64_t chunk_size = 8 << 20;  // bytes read and appended at a time on upload
  // A file larger than chunk_size is uploaded resumably: when the process
  // dies mid-save and the same step is saved again from the same unchanged
  // file, the upload continues and only what the server lacks is sent
  // (UploadFile with TransferOptions::resume; state under the user's cache
  // folder, docs/integrity.md "Resuming uploads").
  bool resume_uploads = true;
  // Restore downloads each file in the parts the store's readers use
  // (ObjectStore readers' ranged_reads(), core/storage/ranged_reads.h), each
  // part one request. download_part_size asks for smaller parts (0: the
  // store's; larger is capped at it). A restore has at most
  // file_concurrency x download_concurrency requests in flight (16 by
  // default), each of at most one part.
  uint64_t download_part_size = 0;
  int download_concurrency = 4;  // parts in flight per file on restore

  // Several ranks saving one checkpoint together (PyTorchJob, TFJob, MPIJob,
  // an Indexed Job). world_size 1 is the single-writer format (version 1).
  // Pass what the launcher says (RANK/WORLD_SIZE, ...): the manager reads no
  // rank from the environment.
  int rank = 0;
  int world_size = 1;
  // > 1: each rank's files go under one of this many key prefixes
  // ("step-.../3f/rank-00003/...", layout.h), so that many ranks saving at
  // once share N prefixes' request rates instead of one (docs/performance.md,
  // "Spreading keys over prefixes"). Give every rank the same value: rank 0
  // finds the others' files by it. Restore, verify and gc read the object
  // names from the manifest and need no option. 0 or 1: no fan-out.
  int rank_prefix_fanout = 0;
  // Which run of the job this is. Parts of another attempt are never
  // committed. Empty: TORCHELASTIC_RUN_ID-TORCHELASTIC_RESTART_COUNT when
  // the launcher sets them (identical on every rank), else "" (then stale
  // parts are kept out by start-up cleanup and the COMMITTER marker; see
  // docs/checkpoints.md, "Attempts").
  std::string attempt;
  // How long rank 0 waits for the other ranks' parts before giving up with
  // DeadlineExceeded naming the missing ranks.
  std::chrono::seconds part_timeout{600};
  // Optional collective barrier (e.g. torch.distributed.barrier). When set,
  // every rank calls it exactly once per save, after writing its part (or
  // failing to), and rank 0 checks the parts once afterwards instead of
  // polling. It must return on every rank or fail: the manager cannot bound it.
  std::function<Status()> barrier;
  // At Start(): delete this rank's parts of uncommitted steps newer than the
  // latest committed one, and (rank 0, empty attempt) write the COMMITTER
  // marker so that parts older than it are never committed. Turn off for
  // processes that each save one step of a running job (`spool ckpt save
  // --rank`): there, other steps' parts may still be in use.
  bool clean_stale_parts_on_start = true;

  // Clocks, injectable for tests: wall time for manifests and retention,
  // steady time for ShouldSave.
  std::function<std::chrono::system_clock::time_point()> wall_clock;
  std::function<std::chrono::steady_clock::time_point()> steady_clock;
};

// What SaveAsync did.
struct AsyncSaveStart {
  bool started = false;  // false: skipped, a save was in flight (WhenBusy::kSkip)
  // The outcome of the previous background save when it finished before
  // this call and was not collected by Wait(): a failed background save is
  // always reported, here or by Wait().
  Status previous;
};

// What Cleanup() removed.
struct CleanupReport {
  std::vector<int64_t> partial_steps_deleted;
  uint64_t objects_deleted = 0;
  // Uploads killed writers left under the root (S3 multipart uploads, local
  // temporary files), aborted; see AbortIncompleteUploads.
  std::vector<IncompleteUpload> uploads_aborted;
};

// What a manager's saves and restores did since it was made (a snapshot;
// docs/metrics.md names the same figures as Prometheus metrics).
struct CheckpointStats {
  uint64_t saves = 0;           // saves that succeeded (ranks other than 0: their part was written)
  uint64_t save_failures = 0;
  uint64_t uploaded_files = 0;  // files this manager uploaded (its own rank's)
  uint64_t uploaded_bytes = 0;
  uint64_t restores = 0;
  uint64_t restore_failures = 0;
  uint64_t restored_bytes = 0;
  std::optional<int64_t> last_saved_step;
  HistogramCounts save_seconds;     // a whole save: uploads, their verification, the commit
  HistogramCounts blocked_seconds;  // the caller's wait in Save, SaveAsync or SaveBeforeDeadline
  HistogramCounts upload_seconds;   // this rank's files, uploaded and each confirmed by size and CRC32C
  HistogramCounts commit_seconds;   // files durable to step committed (rank 0: waiting for every part)
  HistogramCounts restore_seconds;  // download, CRC32C check of every file, swap into place
  HistogramCounts verify_seconds;   // Verify(): every file read back and checked
};

namespace internal {
struct StatsBlock;
}  // namespace internal

// TORCHELASTIC_RUN_ID-TORCHELASTIC_RESTART_COUNT when torchrun set both (the
// same on every rank of one run, new on each restart), else "".
std::string LauncherAttempt();

// RestoreRank's `rank` for every rank's files, under their rank folders.
inline constexpr int kAllRanks = -1;

// What a restore does with a target folder that already exists and is not
// empty. A restore writes a marker file (kRestoreMarkerName) into the folder
// it makes, naming the checkpoint root and step, so that a later restore of
// the same root may replace it; a folder without that marker holds someone's
// files (a project folder, `.`), and is never deleted unless asked.
enum class ExistingFolder {
  // The default: replace an empty folder, or one an earlier restore of the
  // same root made; refuse anything else with FailedPrecondition, before
  // downloading anything.
  kReplaceOnlyRestores,
  // Replace the folder whole, whatever it holds (`spool ckpt restore --replace`).
  kReplace,
};
// The marker a restore leaves in the folder it makes; never saved as part of
// a checkpoint (CheckpointSource::FromFolder skips it).
inline constexpr std::string_view kRestoreMarkerName = ".spool-restore";

class CheckpointManager {
 public:
  // Opens the store of `root_url` (any scheme registered with
  // core/storage/registry.h; call spool::RegisterAllBackends() first for s3://
  // and gs://).
  static Result<std::unique_ptr<CheckpointManager>> Open(std::string_view root_url, CheckpointOptions options = {},
                                                         const StoreOptions& store_options = {});
  // Checkpoints under `root_key` of `store`.
  CheckpointManager(std::shared_ptr<ObjectStore> store, std::string_view root_key, CheckpointOptions options = {});
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  // Whether `step` is due by the save policy (see ShouldSaveStep).
  bool ShouldSave(int64_t step) const;

  // Several ranks: removes this rank's leftovers of uncommitted steps newer
  // than the latest committed one (an earlier run's parts), and on rank 0
  // writes the COMMITTER marker. Open() calls it; a manager constructed
  // directly calls it before its first save. Nothing to do for world_size 1.
  Status Start();

  // Uploads `source` as step `step` and commits it; then applies retention.
  // AlreadyExists if the step is committed already. On failure no manifest
  // is written (uploaded files are removed where possible) and the error
  // names the step and what failed. Waits for a background save in flight.
  // Several ranks: rank R uploads under rank-<R>/ and writes its part; rank
  // 0 then waits for every part (part_timeout, or the barrier) and commits;
  // other ranks return once their part is written (their manifest has
  // format_version 2, only their own rank in `ranks`, and is not committed
  // yet). Only rank 0 writes the LATEST hint and applies retention.
  Result<CheckpointManifest> Save(int64_t step, const CheckpointSource& source, CheckpointMetadata metadata = {});

  // Captures `source` (see CheckpointSource::Capture; buffers are moved in),
  // then uploads and commits in the background and returns. An error means
  // nothing was started (bad path, capture failed). See WhenBusy.
  Result<AsyncSaveStart> SaveAsync(int64_t step, CheckpointSource source, CheckpointMetadata metadata = {});
  // Waits for the background save and returns its manifest or error.
  // FailedPrecondition when there is none to collect.
  Result<CheckpointManifest> Wait();
  bool save_in_flight() const;

  // Saves `step` with priority, for a job about to be stopped: a background
  // save of the same step is given until `deadline` to finish; one of an
  // earlier step is cancelled (its step stays uncommitted). The save then
  // uploads every file at once (bounded by the byte budget), and its uploads
  // are cancelled at `deadline`, leaving the step uncommitted and the
  // previous one latest. A step committed already is returned as it is.
  // Retention is left to the next save (its deletes would eat the margin).
  // Returns the manifest, or DeadlineExceeded naming the step and the latest
  // committed one; never a half-written step.
  Result<CheckpointManifest> SaveBeforeDeadline(int64_t step, const CheckpointSource& source,
                                                CheckpointMetadata metadata,
                                                std::chrono::steady_clock::time_point deadline);

  // The newest committed step; nullopt when there is none.
  Result<std::optional<int64_t>> Latest();
  // Every committed checkpoint's manifest, oldest first.
  Result<std::vector<CheckpointManifest>> List();
  Result<CheckpointManifest> ReadManifest(int64_t step);

  // Downloads step `step` (or the latest) into `folder`, replacing it only
  // when every file arrived with the size and crc32c of the manifest;
  // otherwise `folder` is left as it was. The folder is created when
  // missing (with the umask's mode, as mkdir would); an existing folder is
  // replaced whole, as `existing` allows (see ExistingFolder: by default
  // only an empty folder or an earlier restore of this root). Returns the
  // manifest. DataLoss names a corrupt file; InvalidArgument a manifest path
  // that would leave the folder; NotFound when the step (or any checkpoint)
  // does not exist; FailedPrecondition a folder `existing` does not allow
  // replacing. A multi-rank checkpoint: restores this manager's rank
  // (options.rank), as RestoreRank does.
  Result<CheckpointManifest> Restore(int64_t step, const std::filesystem::path& folder,
                                     ExistingFolder existing = ExistingFolder::kReplaceOnlyRestores);
  Result<CheckpointManifest> RestoreLatest(const std::filesystem::path& folder,
                                           ExistingFolder existing = ExistingFolder::kReplaceOnlyRestores);
  // Restores one rank's files of a multi-rank checkpoint into `folder` (paths
  // relative to the rank folder; any rank may restore any rank's files, e.g.
  // rank 0's shared model), or with kAllRanks every rank's files under
  // rank-<R>/. The manifest returned has `files` and `metadata` of what was
  // restored (for one rank: its files as placed in `folder`, its metadata);
  // `ranks` keeps every rank's metadata (for a job resumed with another
  // world size). A single-writer checkpoint restores whole whatever `rank`.
  // NotFound when the checkpoint has no such rank.
  Result<CheckpointManifest> RestoreRank(int64_t step, int rank, const std::filesystem::path& folder,
                                         ExistingFolder existing = ExistingFolder::kReplaceOnlyRestores);

  // Reads every file of `step` back and checks size and crc32c.
  Status Verify(int64_t step);
  // Deletes all committed checkpoints but the newest `keep_last`; returns
  // the steps deleted, oldest first.
  Result<std::vector<int64_t>> Prune(int keep_last);
  // Deletes partial checkpoints (no manifest) whose newest object is older
  // than `older_than`, then aborts the incomplete uploads under the root
  // started before `older_than` (S3 multipart uploads, local temporary files;
  // GCS sessions expire by themselves).
  Result<CleanupReport> Cleanup(std::chrono::seconds older_than);

  ObjectStore& store() { return *store_; }
  const CheckpointLayout& layout() const { return layout_; }

  // What this manager's saves and restores did; thread-safe. A manager also
  // reports them (owner="checkpoint") to the process's metrics registry
  // (spool/metrics/registry.h), with its store's requests when Open made
  // the store for it.
  CheckpointStats Stats() const;
  RequestCounts Requests() const { return store_->counters().Snapshot(); }

 private:
  // `file_concurrency` 0: options_.file_concurrency.
  Result<CheckpointManifest> SaveLocked(int64_t step, const CheckpointSource& source, CheckpointMetadata metadata,
                                        int file_concurrency = 0, bool retention = true);
  // SaveLocked without the stats it records around it.
  Result<CheckpointManifest> SaveUncounted(int64_t step, const CheckpointSource& source, CheckpointMetadata metadata,
                                           int file_concurrency, bool retention);
  // Which folder this save of `source` uploads under (CheckpointLayout::
  // SaveFolder): a hash of this host, rank, step and the source's entries
  // (paths, sizes, modification times; a buffer's CRC32C), so that another
  // writer's save of other bytes gets another folder, while the same save
  // run again after a crash gets the same one and resumes its uploads.
  uint64_t SaveIdOf(int64_t step, const CheckpointSource& source) const;
  // Uploads `entry` to FileKey(step, save_folder + entry.path); the file's
  // stored_path is save_folder + entry.path.
  Result<CheckpointFile> UploadEntry(int64_t step, const std::string& save_folder, const CheckpointSource::Entry& entry);
  Result<CheckpointFile> UploadEntry(const std::string& key, const CheckpointSource::Entry& entry);
  // Deletes the files this save uploaded (under `save_folder` of `step`)
  // unless the step's committed manifest names them: after a failed save,
  // or one that lost the commit to another writer.
  void RemoveSaveFiles(int64_t step, const std::string& save_folder, const std::vector<std::string>& keys);
  Status ConfirmUpload(const std::string& key, const ObjectInfo& written, uint64_t size, uint32_t crc);
  // Multi-rank saving (multi_rank.cc).
  Result<CheckpointManifest> SaveRankLocked(int64_t step, const CheckpointSource& source,
                                            CheckpointMetadata metadata, int file_concurrency, bool retention);
  Status StartLocked();
  Result<std::vector<CheckpointRankPart>> WaitForParts(int64_t step);
  Status ReadNewParts(int64_t step, std::map<int, CheckpointRankPart>& accepted, std::map<int, std::string>& seen);
  Status CheckPartFiles(int64_t step, const std::vector<CheckpointRankPart>& parts);
  void RemoveOwnPart(int64_t step);
  bool multi_rank() const { return options_.world_size > 1; }
  Status CommitManifest(int64_t step, const std::string& json);
  void WriteLatestHint(int64_t step);
  void ApplyRetention();
  Status DeleteStep(int64_t step);
  void NoteSaveStarted(int64_t step);

  Result<std::vector<int64_t>> ListSteps();  // every step folder, ascending
  Result<bool> IsCommitted(int64_t step);
  Result<CheckpointManifest> RestoreRankOf(CheckpointManifest manifest, int rank, const std::filesystem::path& folder,
                                           ExistingFolder existing);
  Result<CheckpointManifest> RestoreInto(CheckpointManifest manifest, const std::filesystem::path& folder,
                                         const std::string& key_folder, ExistingFolder existing);
  Result<CheckpointManifest> RestoreUncounted(CheckpointManifest manifest, const std::filesystem::path& folder,
                                              const std::string& key_folder, ExistingFolder existing);
  // Downloads manifest.files, each from FileKey(step, key_folder + path).
  Status DownloadAll(const CheckpointManifest& manifest, const std::filesystem::path& temp,
                     const std::string& key_folder = {});
  Status CheckFile(int64_t step, const CheckpointFile& file, uint64_t size, uint32_t crc, std::string_view what);

  std::string Url(std::string_view key) const { return store_->Describe(key); }
  Executor& executor() const;
  ByteBudget& budget() const;
  std::chrono::system_clock::time_point WallNow() const;
  std::chrono::steady_clock::time_point SteadyNow() const;

  void RegisterMetrics(bool with_requests);

  std::shared_ptr<ObjectStore> store_;
  std::unique_ptr<internal::StatsBlock> stats_;
  CheckpointLayout layout_;
  CheckpointOptions options_;
  bool conditional_create_unsupported_ = false;  // guarded by save_mu_
  std::string attempt_;                          // options_.attempt or the launcher's
  bool started_ = false;                         // Start() done; guarded by save_mu_
  // Rank 0: when the COMMITTER marker was written (the store's clock);
  // parts older than it are an earlier run's. Guarded by save_mu_.
  std::optional<std::chrono::system_clock::time_point> committer_since_;

  std::mutex save_mu_;  // held for the whole of a save

  // Guards the policy state and the step being saved; never held while waiting.
  mutable std::mutex state_mu_;
  std::optional<int64_t> last_saved_step_;
  std::chrono::steady_clock::time_point last_save_time_;
  std::optional<int64_t> step_in_flight_;

  // Guards the background save; held while waiting for it.
  mutable std::mutex async_mu_;
  std::optional<std::future<Result<CheckpointManifest>>> background_;
  std::shared_ptr<CancelSource> background_cancel_;  // the background save's work
  int64_t background_step_ = -1;
  // Last: removed from the registry before anything it reads goes.
  metrics::MetricsRegistry::Registration metrics_;
};

}  // namespace spool::checkpoint
