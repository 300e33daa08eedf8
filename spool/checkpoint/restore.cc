// Restoring: download into a fresh hidden folder beside the target, verify
// every file against the manifest, then swap it into place. The target is
// touched only by that final swap, and ends up with the mode it had, or the
// one mkdir gives a new folder.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/checkpoint/stats.h"
#include "spool/core/crc32c.h"
#include "spool/core/log.h"
#include "spool/core/parallel_for.h"
#include "spool/core/storage/local_files.h"
#include "spool/core/storage/transfer.h"

namespace spool::checkpoint {

namespace fs = std::filesystem;

namespace {

// Removes a temporary folder on scope exit unless released.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(fs::path path) : path_(std::move(path)) {}
  ~TemporaryFolder() {
    if (!path_.empty()) {
      std::error_code ignored;
      fs::remove_all(path_, ignored);
    }
  }
  const fs::path& path() const { return path_; }
  void Release() { path_.clear(); }

 private:
  fs::path path_;
};

Result<fs::path> MakeTemporaryFolder(const fs::path& parent, const std::string& name) {
  std::string pattern = (parent / ("." + name + ".spool-restore-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return UnavailableError("cannot create a temporary folder in " + parent.string() + ": " + std::strerror(errno));
  }
  return fs::path(pattern);
}

// Whether a restore may replace `target` (see ExistingFolder): yes when it is
// missing or empty, or holds the marker of an earlier restore of `root`
// (its second line is `root_line`, "root: <url>"). Otherwise
// FailedPrecondition naming one of the files it would have deleted.
Status CheckReplaceable(const fs::path& target, const std::string& root_line, ExistingFolder existing) {
  std::error_code error;
  const fs::file_status status = fs::symlink_status(target, error);
  if (status.type() != fs::file_type::directory || existing == ExistingFolder::kReplace) return OkStatus();
  fs::directory_iterator it(target, error);
  if (error) return UnavailableError("cannot list the restore target " + target.string() + ": " + error.message());
  if (it == fs::directory_iterator()) return OkStatus();  // empty
  std::ifstream marker(target / kRestoreMarkerName);
  std::string line;
  if (marker && std::getline(marker, line) && std::getline(marker, line) && line == root_line) return OkStatus();
  const std::string example = it->path().filename().string();
  return FailedPreconditionError(
      "restore target " + target.string() + " is not empty and is not an earlier restore of this checkpoint root (it "
      "holds '" + example + "', for one); restoring replaces the folder whole, so restore into a new or empty folder, "
      "or pass --replace (Python: replace=True) to replace it and everything in it");
}

// Creates every folder the files need, refusing to go through anything that
// is not a real folder (a symbolic link could lead outside `root`).
Status MakeFolders(const fs::path& root, const std::vector<CheckpointFile>& files) {
  for (const CheckpointFile& file : files) {
    fs::path folder = root;
    fs::path relative = fs::path(file.path).parent_path();
    for (const fs::path& segment : relative) {
      folder /= segment;
      std::error_code error;
      fs::file_status status = fs::symlink_status(folder, error);
      if (status.type() == fs::file_type::not_found) {
        if (!fs::create_directory(folder, error) && error) {
          return UnavailableError("cannot create " + folder.string() + ": " + error.message());
        }
      } else if (status.type() != fs::file_type::directory) {
        return InvalidArgumentError("checkpoint file path '" + file.path + "' goes through " + folder.string() +
                                    ", which is not a folder (a symbolic link?); refusing to write there");
      }
    }
  }
  return OkStatus();
}

// Gives the restored folder `fresh` (made 0700 by mkdtemp, so nobody sees
// files arriving) the mode `target` should have: the mode of the folder it
// replaces, else what mkdir(2) gives a new folder there (0777 less the
// umask, or the parent's default ACL), found by making one inside `fresh`.
Status SetFinalMode(const fs::path& fresh, const fs::path& target) {
  struct stat info{};
  mode_t mode = 0;
  if (::lstat(target.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    mode = info.st_mode & 07777;
  } else {
    const fs::path probe = fresh / ".spool-mode-probe";
    if (::mkdir(probe.c_str(), 0777) != 0 || ::stat(probe.c_str(), &info) != 0) {
      return UnavailableError("cannot create a folder in " + fresh.string() + ": " + std::strerror(errno));
    }
    ::rmdir(probe.c_str());
    mode = info.st_mode & 07777;
  }
  if (::chmod(fresh.c_str(), mode) != 0) {
    return UnavailableError("cannot set the mode of " + fresh.string() + ": " + std::strerror(errno));
  }
  return OkStatus();
}

Result<uint32_t> LocalFileCrc32c(const fs::path& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return UnavailableError("cannot read " + path.string() + ": " + std::strerror(errno));
  std::vector<char> buffer(1 << 20);
  uint32_t crc = 0;
  size_t got;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), file)) > 0) crc = crc32c::Extend(crc, buffer.data(), got);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return UnavailableError("cannot read " + path.string());
  return crc;
}

// Puts `fresh` where `target` is. With a target in place the two are
// exchanged atomically where the filesystem can (renameat2), else the old one
// is renamed aside first and put back if the second rename fails. `old`
// receives where the previous target ended up (to be removed), if any.
Status SwapIntoPlace(const fs::path& fresh, const fs::path& target, fs::path* old) {
  std::error_code error;
  fs::file_status status = fs::symlink_status(target, error);
  if (status.type() == fs::file_type::not_found) {
    if (::rename(fresh.c_str(), target.c_str()) != 0) {
      return UnavailableError("cannot move the restored checkpoint to " + target.string() + ": " +
                              std::strerror(errno));
    }
    return OkStatus();
  }
  if (status.type() != fs::file_type::directory) {
    return FailedPreconditionError("restore target " + target.string() +
                                   " exists and is not a folder (a file or a symbolic link); remove it or pass "
                                   "the folder itself");
  }
  if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    *old = fresh;  // now holds the previous contents
    return OkStatus();
  }
  fs::path aside = fresh;
  aside += ".old";
  if (::rename(target.c_str(), aside.c_str()) != 0) {
    return UnavailableError("cannot move " + target.string() + " aside: " + std::strerror(errno));
  }
  if (::rename(fresh.c_str(), target.c_str()) != 0) {
    int saved = errno;
    ::rename(aside.c_str(), target.c_str());
    return UnavailableError("cannot move the restored checkpoint to " + target.string() + ": " +
                            std::strerror(saved));
  }
  *old = aside;
  return OkStatus();
}

}  // namespace

Result<CheckpointManifest> CheckpointManager::RestoreLatest(const fs::path& folder, ExistingFolder existing) {
  SPOOL_ASSIGN_OR_RETURN(std::optional<int64_t> latest, Latest());
  if (!latest) {
    return NotFoundError("no committed checkpoint under " + Url(layout_.ListPrefix()) +
                         "; nothing to restore (start from scratch)");
  }
  return Restore(*latest, folder, existing);
}

namespace {

// Where rank `rank`'s objects are, relative to the step folder, as the step's
// manifest lists them: "rank-00003/", or with prefix fan-out "3f/rank-00003/"
// (layout.h). Read from the manifest, so a reader needs no option.
std::string RankKeyFolder(const CheckpointManifest& manifest, int rank) {
  const std::string folder = CheckpointLayout::RankFolder(rank) + "/";
  if (manifest.ranks[rank].files.empty()) return folder;
  const CheckpointFile& first = manifest.ranks[rank].files.front();
  for (const CheckpointFile& listed : manifest.files) {
    if (listed.path == folder + first.path && listed.object_path().ends_with(first.object_path())) {
      return listed.object_path().substr(0, listed.object_path().size() - first.object_path().size());
    }
  }
  return folder;
}

}  // namespace

Result<CheckpointManifest> CheckpointManager::Restore(int64_t step, const fs::path& folder,
                                                     ExistingFolder existing) {
  SPOOL_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifest(step));  // paths validated there
  if (manifest.format_version >= kMultiRankManifestFormatVersion) {
    return RestoreRankOf(std::move(manifest), options_.rank, folder, existing);
  }
  return RestoreInto(std::move(manifest), folder, {}, existing);
}

Result<CheckpointManifest> CheckpointManager::RestoreRank(int64_t step, int rank, const fs::path& folder,
                                                         ExistingFolder existing) {
  SPOOL_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifest(step));
  if (manifest.format_version < kMultiRankManifestFormatVersion || rank == kAllRanks) {
    return RestoreInto(std::move(manifest), folder, {}, existing);
  }
  return RestoreRankOf(std::move(manifest), rank, folder, existing);
}

Result<CheckpointManifest> CheckpointManager::RestoreRankOf(CheckpointManifest manifest, int rank,
                                                           const fs::path& folder, ExistingFolder existing) {
  if (rank < 0 || rank >= manifest.world_size) {
    return NotFoundError("checkpoint step " + std::to_string(manifest.step) + " was saved by ranks 0 to " +
                         std::to_string(manifest.world_size - 1) + ", it has no rank " + std::to_string(rank) +
                         "; restore one of those (RestoreRank) and read every rank's metadata from the manifest");
  }
  const std::string key_folder = RankKeyFolder(manifest, rank);
  manifest.files = manifest.ranks[rank].files;
  manifest.metadata = manifest.ranks[rank].metadata;
  return RestoreInto(std::move(manifest), folder, key_folder, existing);
}

Result<CheckpointManifest> CheckpointManager::RestoreInto(CheckpointManifest manifest, const fs::path& folder,
                                                         const std::string& key_folder, ExistingFolder existing) {
  uint64_t bytes = 0;
  for (const CheckpointFile& file : manifest.files) bytes += file.size;
  Result<CheckpointManifest> restored = [&] {
    internal::ScopedTimer timer(stats_->restore);
    return RestoreUncounted(std::move(manifest), folder, key_folder, existing);
  }();
  if (restored.ok()) {
    stats_->restores.fetch_add(1);
    stats_->restored_bytes.fetch_add(bytes);
  } else {
    stats_->restore_failures.fetch_add(1);
  }
  return restored;
}

Result<CheckpointManifest> CheckpointManager::RestoreUncounted(CheckpointManifest manifest, const fs::path& folder,
                                                              const std::string& key_folder, ExistingFolder existing) {
  const int64_t step = manifest.step;
  if (folder.empty()) return InvalidArgumentError("restore target folder is empty");
  const fs::path target = fs::absolute(folder).lexically_normal();
  fs::path parent = target.parent_path();
  std::string name = target.filename().string();
  if (name.empty()) {  // "/some/folder/" normalises to a trailing empty name
    parent = target.parent_path().parent_path();
    name = target.parent_path().filename().string();
  }
  if (name.empty()) return InvalidArgumentError("cannot restore into " + folder.string() + ": it has no name");
  const fs::path destination = parent / name;
  // The marker left in the restored folder: its second line names the root.
  const std::string root_line = "root: " + Url(layout_.root());
  const std::string marker = "restored by spool; a later restore of this root may replace this folder\n" +
                             root_line + "\nstep: " + std::to_string(step) + "\n";
  // Before any byte moves: a folder of someone's own files is never replaced
  // unless asked (the check runs again just before the swap).
  SPOOL_RETURN_IF_ERROR(CheckReplaceable(destination, root_line, existing));

  std::error_code error;
  fs::create_directories(parent, error);
  if (error) return UnavailableError("cannot create " + parent.string() + ": " + error.message());
  SPOOL_ASSIGN_OR_RETURN(fs::path temp_path, MakeTemporaryFolder(parent, name));
  TemporaryFolder temp(temp_path);

  Status downloaded = DownloadAll(manifest, temp.path(), key_folder);
  if (!downloaded.ok()) {
    return downloaded.WithContext("restoring checkpoint step " + std::to_string(step) + " into " +
                                  destination.string() + " failed, the folder was left as it was");
  }
  {
    std::ofstream out(temp.path() / kRestoreMarkerName, std::ios::trunc);
    out << marker;
    if (!out.flush()) return UnavailableError("cannot write " + (temp.path() / kRestoreMarkerName).string());
  }
  // Files may have appeared in the target while the download ran.
  SPOOL_RETURN_IF_ERROR(CheckReplaceable(destination, root_line, existing));
  SPOOL_RETURN_IF_ERROR(SetFinalMode(temp.path(), destination));
  fs::path old;
  SPOOL_RETURN_IF_ERROR(SwapIntoPlace(temp.path(), destination, &old));
  temp.Release();
  // Each file was made durable as it arrived; this makes the swap durable.
  SPOOL_RETURN_IF_ERROR(SyncFolder(destination.has_parent_path() ? destination.parent_path().string() : "."));
  if (!old.empty()) {
    fs::remove_all(old, error);
    if (error) log::Write(log::Level::kInfo, "checkpoint", "cannot remove " + old.string() + ": " + error.message());
  }
  return manifest;
}

Status CheckpointManager::DownloadAll(const CheckpointManifest& manifest, const fs::path& temp,
                                      const std::string& key_folder) {
  SPOOL_RETURN_IF_ERROR(MakeFolders(temp, manifest.files));
  TransferOptions transfer;
  transfer.executor = &executor();
  transfer.budget = &budget();
  transfer.part_size = options_.download_part_size;
  transfer.concurrency = options_.download_concurrency;
  // A restored checkpoint is what a job resumes from after a crash of the
  // machine too: every file is on disk before the folder is swapped in.
  transfer.durable = true;
  return ParallelFor(executor(), manifest.files.size(), options_.file_concurrency, [&](size_t i) -> Status {
    const CheckpointFile& file = manifest.files[i];
    const std::string key = layout_.FileKey(manifest.step, key_folder + file.object_path());
    const fs::path destination = temp / fs::path(file.path);
    Result<ObjectInfo> info = DownloadFile(*store_, key, destination, transfer);
    if (!info.ok()) {
      return info.status().WithContext("checkpoint step " + std::to_string(manifest.step) + " file '" +
                                       key_folder + file.path + "'");
    }
    uint32_t crc = 0;
    if (info->crc32c) {
      crc = *info->crc32c;
    } else {
      SPOOL_ASSIGN_OR_RETURN(crc, LocalFileCrc32c(destination));
    }
    const CheckpointFile in_step{key_folder + file.path, file.size, file.crc32c, key_folder + file.object_path()};
    return CheckFile(manifest.step, in_step, info->size, crc, "downloaded");
  });
}

}  // namespace spool::checkpoint
