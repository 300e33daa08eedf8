// CheckpointManager: construction, the save policy and background saves.
// Saving is in save.cc, listing and deleting in catalog.cc, restoring in
// restore.cc.
#include "spool/checkpoint/checkpoint_manager.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <system_error>
#include <thread>

#include "spool/checkpoint/stats.h"
#include "spool/core/log.h"

namespace spool::checkpoint {

namespace fs = std::filesystem;

Result<std::unique_ptr<CheckpointManager>> CheckpointManager::Open(std::string_view root_url,
                                                                   CheckpointOptions options,
                                                                   const StoreOptions& store_options) {
  StoreOptions effective = store_options;
  if (effective.executor == nullptr) effective.executor = options.executor;
  if (effective.budget == nullptr) effective.budget = options.budget;
  // Counters of its own, so that its requests are reported as the manager's.
  const bool own_counters = !effective.counters;
  if (own_counters) effective.counters = std::make_shared<RequestCounters>();
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, OpenLocation(root_url, effective));
  auto manager = std::make_unique<CheckpointManager>(std::move(location.store), location.key, std::move(options));
  if (own_counters) manager->RegisterMetrics(true);
  SPOOL_RETURN_IF_ERROR(manager->Start());
  return manager;
}

CheckpointManager::CheckpointManager(std::shared_ptr<ObjectStore> store, std::string_view root_key,
                                     CheckpointOptions options)
    : store_(std::move(store)),
      stats_(std::make_unique<internal::StatsBlock>()),
      layout_(root_key, options.rank_prefix_fanout),
      options_(std::move(options)) {
  attempt_ = options_.attempt.empty() ? LauncherAttempt() : options_.attempt;
  last_save_time_ = SteadyNow();
  RegisterMetrics(false);
}

CheckpointManager::~CheckpointManager() {
  std::lock_guard lock(async_mu_);
  if (!background_) return;
  if (background_->wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    background_cancel_->Cancel();
    log::Write(log::Level::kInfo, "checkpoint",
               "the background save of step " + std::to_string(background_step_) +
                   " was cancelled, uncommitted: the CheckpointManager was destroyed before Wait()");
  }
  background_->wait();
}

Executor& CheckpointManager::executor() const {
  return options_.executor != nullptr ? *options_.executor : DefaultExecutor();
}

ByteBudget& CheckpointManager::budget() const {
  return options_.budget != nullptr ? *options_.budget : DefaultByteBudget();
}

std::chrono::system_clock::time_point CheckpointManager::WallNow() const {
  return options_.wall_clock ? options_.wall_clock() : std::chrono::system_clock::now();
}

std::chrono::steady_clock::time_point CheckpointManager::SteadyNow() const {
  return options_.steady_clock ? options_.steady_clock() : std::chrono::steady_clock::now();
}

bool CheckpointManager::ShouldSave(int64_t step) const {
  std::lock_guard lock(state_mu_);
  return ShouldSaveStep(options_.save, step, last_saved_step_, last_save_time_, SteadyNow());
}

void CheckpointManager::NoteSaveStarted(int64_t step) {
  std::lock_guard lock(state_mu_);
  last_saved_step_ = step;
  last_save_time_ = SteadyNow();
  step_in_flight_ = step;
}

Result<CheckpointManifest> CheckpointManager::Save(int64_t step, const CheckpointSource& source,
                                                   CheckpointMetadata metadata) {
  internal::ScopedTimer blocked(stats_->blocked);
  std::lock_guard save_lock(save_mu_);
  NoteSaveStarted(step);
  Result<CheckpointManifest> result = SaveLocked(step, source, std::move(metadata));
  std::lock_guard lock(state_mu_);
  step_in_flight_.reset();
  return result;
}

namespace {

// A staging folder nobody else uses: hidden, beside the source folder (or
// the first source file), named after the step and this process.
fs::path StagingFolder(const CheckpointOptions& options, const CheckpointSource& source, int64_t step) {
  fs::path base = options.staging_dir;
  if (base.empty() && !source.folder().empty()) base = source.folder().parent_path();
  if (base.empty()) {
    for (const CheckpointSource::Entry& entry : source.entries()) {
      if (const auto* file = std::get_if<fs::path>(&entry.content)) {
        base = fs::absolute(*file).parent_path();
        break;
      }
    }
  }
  static std::atomic<uint64_t> counter{0};
  return base / (".spool-staging-" + std::to_string(step) + "-" + std::to_string(::getpid()) + "-" +
                 std::to_string(counter++));
}

bool HasFiles(const CheckpointSource& source) {
  for (const CheckpointSource::Entry& entry : source.entries()) {
    if (std::holds_alternative<fs::path>(entry.content)) return true;
  }
  return false;
}

}  // namespace

Result<AsyncSaveStart> CheckpointManager::SaveAsync(int64_t step, CheckpointSource source,
                                                    CheckpointMetadata metadata) {
  if (step < 0) return InvalidArgumentError("checkpoint step " + std::to_string(step) + " is negative");
  SPOOL_RETURN_IF_ERROR(source.Validate());
  internal::ScopedTimer blocked(stats_->blocked);

  // Held until the new save is registered, so two callers cannot both start.
  std::lock_guard lock(async_mu_);
  AsyncSaveStart start;
  if (background_) {
    bool finished = background_->wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    if (!finished && options_.when_busy == CheckpointOptions::WhenBusy::kSkip) return start;
    start.previous = background_->get().status();
    background_.reset();
  }

  source.OwnBuffers();  // the caller's borrowed bytes may be gone before the upload
  std::optional<fs::path> staging;
  if (HasFiles(source)) {
    staging = StagingFolder(options_, source, step);
    Status captured = source.Capture(*staging, options_.copy_on_capture);
    if (!captured.ok()) {
      std::error_code ignored;
      fs::remove_all(*staging, ignored);
      return captured.WithContext("checkpoint step " + std::to_string(step) + " was not started");
    }
  }
  {
    std::lock_guard state_lock(state_mu_);
    last_saved_step_ = step;
    last_save_time_ = SteadyNow();
  }

  auto promise = std::make_shared<std::promise<Result<CheckpointManifest>>>();
  std::future<Result<CheckpointManifest>> future = promise->get_future();
  auto owned = std::make_shared<CheckpointSource>(std::move(source));
  // The save's requests run under its own token: the destructor and
  // SaveBeforeDeadline cancel it.
  background_cancel_ = std::make_shared<CancelSource>();
  background_step_ = step;
  CancelScope scope(background_cancel_->token());
  auto task = [this, promise, owned, staging, step, metadata = std::move(metadata)]() mutable {
    Result<CheckpointManifest> result = [&] {
      std::lock_guard save_lock(save_mu_);
      {
        std::lock_guard state_lock(state_mu_);
        step_in_flight_ = step;
      }
      Result<CheckpointManifest> saved = SaveLocked(step, *owned, std::move(metadata));
      std::lock_guard state_lock(state_mu_);
      step_in_flight_.reset();
      return saved;
    }();
    if (staging) {
      std::error_code ignored;
      fs::remove_all(*staging, ignored);
    }
    if (!result.ok()) log::Write(log::Level::kInfo, "checkpoint", result.status().ToString());
    promise->set_value(std::move(result));  // the last use of `this`
  };
  if (multi_rank() && options_.rank == 0) {
    // Rank 0 waits up to part_timeout for the other ranks' parts: on a thread
    // of its own, because a pool task can be run inline by any thread that
    // helps the pool while it waits (TaskGroup::Wait), which would then be
    // blocked by this wait. The destructor waits for the result.
    std::thread([task = std::move(task), token = background_cancel_->token()]() mutable {
      CancelScope thread_scope(token);
      task();
    }).detach();
  } else {
    executor().Submit(std::move(task));
  }

  background_ = std::move(future);
  start.started = true;
  return start;
}

Result<CheckpointManifest> CheckpointManager::SaveBeforeDeadline(int64_t step, const CheckpointSource& source,
                                                                 CheckpointMetadata metadata,
                                                                 std::chrono::steady_clock::time_point deadline) {
  internal::ScopedTimer blocked(stats_->blocked);
  const std::string what = "checkpoint step " + std::to_string(step);
  auto missed = [&](const Status& status) -> Status {
    std::string latest = "none";
    {
      // The report itself must not be cut short by the deadline.
      CancelScope report(CancelToken::Process());
      if (auto found = Latest(); found.ok() && *found) latest = "step " + std::to_string(**found);
    }
    return DeadlineExceededError(what + " was not committed before the preemption deadline; the latest committed "
                                 "checkpoint is " + latest + " (" + status.message() + ")");
  };
  {
    std::lock_guard lock(async_mu_);
    if (background_) {
      if (background_step_ == step) {
        // This very step is uploading already: it gets until the deadline.
        background_cancel_->CancelAt(deadline);
        Result<CheckpointManifest> result = background_->get();
        background_.reset();
        if (!result.ok() && std::chrono::steady_clock::now() >= deadline) return missed(result.status());
        return result;
      }
      // An older step would only compete with this one for the network.
      background_cancel_->Cancel();
      Status previous = background_->get().status();
      background_.reset();
      if (!previous.ok()) {
        log::Write(log::Level::kInfo, "checkpoint",
                   "the background save of step " + std::to_string(background_step_) +
                       " did not commit (cancelled for the preemption save of step " + std::to_string(step) +
                       "): " + previous.ToString());
      }
    }
  }
  {
    // Saved already (a periodic save of this step came first): nothing to do.
    CancelScope lookup(CancelToken::Process());
    if (Result<bool> committed = IsCommitted(step); committed.ok() && *committed) return ReadManifest(step);
  }
  CancelSource save;
  save.CancelAt(deadline);
  CancelScope scope(save.token());
  std::lock_guard save_lock(save_mu_);
  NoteSaveStarted(step);
  // Every file at once: nothing else should be using the budget now.
  const int files = static_cast<int>(std::min<size_t>(source.entries().size(), 64));
  Result<CheckpointManifest> result =
      SaveLocked(step, source, std::move(metadata), std::max(files, options_.file_concurrency), /*retention=*/false);
  {
    std::lock_guard lock(state_mu_);
    step_in_flight_.reset();
  }
  if (!result.ok() && std::chrono::steady_clock::now() >= deadline) return missed(result.status());
  return result;
}

Result<CheckpointManifest> CheckpointManager::Wait() {
  std::lock_guard lock(async_mu_);
  if (!background_) return FailedPreconditionError("no background checkpoint save to wait for");
  Result<CheckpointManifest> result = background_->get();
  background_.reset();
  return result;
}

bool CheckpointManager::save_in_flight() const {
  std::lock_guard lock(async_mu_);
  return background_ && background_->wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

}  // namespace spool::checkpoint
