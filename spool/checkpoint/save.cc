// Saving: upload every file in parallel with its checksum confirmed, then
// commit the manifest create-only, then the LATEST hint and retention.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <variant>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/checkpoint/stats.h"
#include "spool/core/parallel_for.h"
#include "spool/core/storage/transfer.h"
#include "spool/core/cancel.h"
#include "spool/core/crc32c.h"
#include "spool/core/log.h"

namespace spool::checkpoint {

namespace fs = std::filesystem;

namespace {

// A file descriptor closed on scope exit.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<CheckpointManifest> CheckpointManager::SaveLocked(int64_t step, const CheckpointSource& source,
                                                         CheckpointMetadata metadata, int file_concurrency,
                                                         bool retention) {
  Result<CheckpointManifest> saved = [&] {
    internal::ScopedTimer timer(stats_->save);
    return SaveUncounted(step, source, std::move(metadata), file_concurrency, retention);
  }();
  if (saved.ok()) {
    stats_->saves.fetch_add(1);
    stats_->last_saved_step.store(step);
  } else {
    stats_->save_failures.fetch_add(1);
  }
  return saved;
}

Result<CheckpointManifest> CheckpointManager::SaveUncounted(int64_t step, const CheckpointSource& source,
                                                            CheckpointMetadata metadata, int file_concurrency,
                                                            bool retention) {
  const std::string where = "checkpoint step " + std::to_string(step) + " at " + Url(layout_.StepPrefix(step));
  if (step < 0) return InvalidArgumentError("checkpoint step " + std::to_string(step) + " is negative");
  SPOOL_RETURN_IF_ERROR(source.Validate());
  if (file_concurrency <= 0) file_concurrency = options_.file_concurrency;
  if (multi_rank()) return SaveRankLocked(step, source, std::move(metadata), file_concurrency, retention);

  Result<bool> committed = IsCommitted(step);
  if (!committed.ok()) return committed.status().WithContext("saving " + where);
  if (*committed) {
    return AlreadyExistsError(where + " is already committed; checkpoints are immutable: save another step or "
                              "Prune this one first");
  }

  // Every file goes under this save's own folder of the step: another
  // writer saving the same step at the same time uploads elsewhere, so the
  // commit that wins names bytes no other writer can change.
  const auto& entries = source.entries();
  const std::string save_folder = CheckpointLayout::SaveFolder(SaveIdOf(step, source));
  std::vector<std::string> keys;
  for (const auto& entry : entries) keys.push_back(layout_.FileKey(step, save_folder + entry.path));
  std::vector<CheckpointFile> files(entries.size());
  Status uploaded = [&] {
    internal::ScopedTimer timer(stats_->upload);
    return ParallelFor(executor(), entries.size(), file_concurrency, [&](size_t i) -> Status {
      SPOOL_ASSIGN_OR_RETURN(files[i], UploadEntry(step, save_folder, entries[i]));
      return OkStatus();
    });
  }();
  // A cancelled save (the caller's Ctrl-C, a destroyed manager, a
  // preemption deadline) never commits, even when every file arrived.
  if (uploaded.ok()) uploaded = CancelToken::Current().Check("saving " + where);
  if (!uploaded.ok()) {
    // No manifest names these files: remove what did arrive so the folder
    // does not wait for Cleanup(). This still runs when the save was cancelled.
    RemoveSaveFiles(step, save_folder, keys);
    return uploaded.WithContext("saving " + where + " failed, nothing was committed");
  }

  internal::ScopedTimer commit_timer(stats_->commit);
  CheckpointManifest manifest;
  manifest.step = step;
  manifest.wall_time = WallNow();
  manifest.files = std::move(files);
  manifest.metadata = std::move(metadata);
  SPOOL_ASSIGN_OR_RETURN(std::string json, EncodeManifest(manifest));
  // A commit that started completes (a few small requests), so its outcome
  // is known: no cancel lands between the manifest and what follows it.
  CancelScope commit_scope(CancelToken::Process());
  Status commit = CommitManifest(step, json);
  if (!commit.ok()) {
    // Another writer's manifest won (or the commit failed): these files are
    // nobody's, unless the manifest that stands names them.
    RemoveSaveFiles(step, save_folder, keys);
    return commit.WithContext("committing " + where);
  }

  if (options_.write_latest_hint) WriteLatestHint(step);
  if (retention) ApplyRetention();
  return manifest;
}

uint64_t CheckpointManager::SaveIdOf(int64_t step, const CheckpointSource& source) const {
  // FNV-1a, 64 bits: not a security boundary, only distinct writers' saves
  // apart (a collision needs two writers with the same host name, rank, step
  // and file list, sizes and modification times to the nanosecond).
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&hash](std::string_view bytes) {
    for (unsigned char c : bytes) hash = (hash ^ c) * 0x100000001b3ull;
    hash = (hash ^ 0xff) * 0x100000001b3ull;  // a separator, so "ab"+"c" differs from "a"+"bc"
  };
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  mix(host);
  mix(std::to_string(options_.rank) + "/" + std::to_string(options_.world_size) + "/" + std::to_string(step));
  for (const CheckpointSource::Entry& entry : source.entries()) {
    mix(entry.path);
    if (const std::optional<std::string_view> bytes = entry.bytes()) {
      mix(std::to_string(bytes->size()) + ":" + std::to_string(crc32c::Value(bytes->data(), bytes->size())));
      continue;
    }
    const fs::path& file = std::get<fs::path>(entry.content);
    struct stat info {};
    mix(fs::absolute(file).string());
    if (::stat(file.c_str(), &info) == 0) {
      mix(std::to_string(info.st_size) + ":" + std::to_string(info.st_mtim.tv_sec) + "." +
          std::to_string(info.st_mtim.tv_nsec));
    }
  }
  return hash;
}

Result<CheckpointFile> CheckpointManager::UploadEntry(int64_t step, const std::string& save_folder,
                                                      const CheckpointSource::Entry& entry) {
  SPOOL_ASSIGN_OR_RETURN(CheckpointFile file, UploadEntry(layout_.FileKey(step, save_folder + entry.path), entry));
  file.stored_path = save_folder + entry.path;
  return file;
}

void CheckpointManager::RemoveSaveFiles(int64_t step, const std::string& save_folder,
                                        const std::vector<std::string>& keys) {
  CancelScope cleanup(CancelToken::Process());
  Result<CheckpointManifest> committed = ReadManifest(step);
  if (committed.ok()) {
    for (const CheckpointFile& file : committed->files) {
      // The manifest that stands is this save's own (its answer was lost):
      // its files stay.
      if (file.object_path().find(save_folder) != std::string::npos) return;
    }
  } else if (committed.status().code() != StatusCode::kNotFound) {
    return;  // cannot tell: leave them to Cleanup()
  }
  store_->DeleteMany(keys).status().IgnoreError();
}

Result<CheckpointFile> CheckpointManager::UploadEntry(const std::string& key, const CheckpointSource::Entry& entry) {
  const uint64_t chunk_size = std::max<uint64_t>(options_.chunk_size, 4096);
  WriteOptions write_options;
  write_options.content_type = "application/octet-stream";
  uint32_t crc = 0;
  uint64_t size = 0;

  if (const std::optional<std::string_view> bytes = entry.bytes()) {
    write_options.expected_size = bytes->size();
    SPOOL_ASSIGN_OR_RETURN(auto writer, store_->OpenWrite(key, write_options));
    for (uint64_t offset = 0; offset < bytes->size(); offset += chunk_size) {
      std::string_view chunk = bytes->substr(offset, chunk_size);
      crc = crc32c::Extend(crc, chunk.data(), chunk.size());
      SPOOL_RETURN_IF_ERROR(writer->Append(chunk));
    }
    size = bytes->size();
    SPOOL_ASSIGN_OR_RETURN(ObjectInfo written, writer->Close());
    SPOOL_RETURN_IF_ERROR(ConfirmUpload(key, written, size, crc));
    stats_->uploaded_files.fetch_add(1);
    stats_->uploaded_bytes.fetch_add(size);
    return CheckpointFile{entry.path, size, crc};
  }

  const fs::path& path = std::get<fs::path>(entry.content);
  std::error_code size_error;
  if (options_.resume_uploads && fs::file_size(path, size_error) > chunk_size && !size_error) {
    // The one file uploader, so that a step saved again after a crash
    // continues the upload the dead process left.
    TransferOptions transfer;
    transfer.part_size = chunk_size;
    transfer.executor = &executor();
    transfer.budget = &budget();
    transfer.write.content_type = write_options.content_type;
    transfer.resume = true;
    SPOOL_ASSIGN_OR_RETURN(ObjectInfo written, UploadFile(path, *store_, key, transfer));
    if (!written.crc32c) return InternalError("uploading " + path.string() + " computed no CRC32C");
    SPOOL_RETURN_IF_ERROR(ConfirmUpload(key, written, written.size, *written.crc32c));
    stats_->uploaded_files.fetch_add(1);
    stats_->uploaded_bytes.fetch_add(written.size);
    return CheckpointFile{entry.path, written.size, *written.crc32c};
  }
  FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) {
    return NotFoundError("cannot open checkpoint file " + path.string() + ": " + std::strerror(errno));
  }
  std::error_code error;
  uint64_t expected = fs::file_size(path, error);
  if (!error) write_options.expected_size = expected;
  SPOOL_ASSIGN_OR_RETURN(auto writer, store_->OpenWrite(key, write_options));
  ByteBudget::Lease lease(&budget(), std::min<uint64_t>(chunk_size, std::max<uint64_t>(expected, 1)));
  std::unique_ptr<char[]> buffer(new char[lease.bytes()]);
  while (true) {
    ssize_t got = ::read(file.fd, buffer.get(), lease.bytes());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return UnavailableError("cannot read checkpoint file " + path.string() + ": " + std::strerror(errno));
    }
    if (got == 0) break;
    crc = crc32c::Extend(crc, buffer.get(), static_cast<size_t>(got));
    size += static_cast<uint64_t>(got);
    SPOOL_RETURN_IF_ERROR(writer->Append(std::string_view(buffer.get(), static_cast<size_t>(got))));
  }
  SPOOL_ASSIGN_OR_RETURN(ObjectInfo written, writer->Close());
  SPOOL_RETURN_IF_ERROR(ConfirmUpload(key, written, size, crc));
  stats_->uploaded_files.fetch_add(1);
  stats_->uploaded_bytes.fetch_add(size);
  return CheckpointFile{entry.path, size, crc};
}

// The checksum is confirmed against what the store reports after Close where
// it reports one; otherwise the size is confirmed by a fresh Stat.
Status CheckpointManager::ConfirmUpload(const std::string& key, const ObjectInfo& written, uint64_t size,
                                        uint32_t crc) {
  ObjectInfo info = written;
  if (!info.crc32c) {
    SPOOL_ASSIGN_OR_RETURN(info, store_->Stat(key));
  }
  if (info.size != size) {
    return DataLossError(Url(key) + " holds " + std::to_string(info.size) + " bytes after upload, " +
                         std::to_string(size) + " were sent; save again");
  }
  if (info.crc32c && *info.crc32c != crc) {
    return DataLossError(Url(key) + " has crc32c " + FormatCrc32c(*info.crc32c) + " after upload, the bytes sent have " +
                         FormatCrc32c(crc) + "; save again");
  }
  return OkStatus();
}

// Create-only where the store can; where it reports Unimplemented (Ceph RGW
// 16 ignores If-None-Match), a Stat check then one plain PUT, still last.
Status CheckpointManager::CommitManifest(int64_t step, const std::string& json) {
  const std::string key = layout_.ManifestKey(step);
  WriteOptions write_options;
  write_options.content_type = "application/json";
  write_options.expected_size = json.size();
  if (!conditional_create_unsupported_) {
    write_options.if_not_exists = true;
    Result<ObjectInfo> written = WriteAll(*store_, key, json, write_options);
    if (written.ok()) return OkStatus();
    if (written.status().code() == StatusCode::kAlreadyExists) {
      // The store's retry of our own PUT finds the key taken when the first
      // attempt landed but its answer was lost: the same bytes mean it did.
      if (auto stored = ReadAll(*store_, key); stored.ok() && *stored == json) return OkStatus();
      return AlreadyExistsError(Url(key) + " was committed by another writer meanwhile; this save is discarded");
    }
    if (written.status().code() != StatusCode::kUnimplemented) return written.status();
    conditional_create_unsupported_ = true;
    log::Write(log::Level::kInfo, "checkpoint",
               Url(key) + ": the store has no create-only write; committing with a plain PUT");
    write_options.if_not_exists = false;
  }
  SPOOL_ASSIGN_OR_RETURN(bool exists, IsCommitted(step));
  if (exists) {
    return AlreadyExistsError(Url(key) + " was committed by another writer meanwhile; this save is discarded");
  }
  return WriteAll(*store_, key, json, write_options).status();
}

void CheckpointManager::WriteLatestHint(int64_t step) {
  const std::string key = layout_.LatestHintKey();
  Result<ObjectInfo> written = WriteAll(*store_, key, std::to_string(step) + "\n");
  if (!written.ok()) {
    // Only a hint: Latest() finds the step from the manifests anyway.
    log::Write(log::Level::kInfo, "checkpoint", "cannot update " + Url(key) + ": " + written.status().ToString());
  }
}

void CheckpointManager::ApplyRetention() {
  if (options_.retention.keep_last <= 0) return;
  Result<std::vector<CheckpointManifest>> committed = List();
  if (!committed.ok()) {
    log::Write(log::Level::kInfo, "checkpoint", "retention skipped: " + committed.status().ToString());
    return;
  }
  std::vector<RetentionCandidate> candidates;
  for (const CheckpointManifest& manifest : *committed) candidates.push_back({manifest.step, manifest.wall_time});
  for (int64_t step : StepsToDelete(options_.retention, std::move(candidates))) {
    Status deleted = DeleteStep(step);
    if (!deleted.ok()) log::Write(log::Level::kInfo, "checkpoint", "retention: " + deleted.ToString());
  }
}

}  // namespace spool::checkpoint
