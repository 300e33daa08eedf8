#include "spool/checkpoint/source.h"

#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/checkpoint/manifest.h"
#include "spool/core/storage/local_files.h"

namespace spool::checkpoint {

namespace fs = std::filesystem;

namespace {

// What every refused link says the user can do instead.
constexpr std::string_view kFollowHint =
    "or let the save follow links (spool ckpt save --follow-symlinks; follow_symlinks=True in Python)";

// Whether `path` is `root` or below it; both canonical.
bool IsWithin(const fs::path& path, const fs::path& root) {
  return std::mismatch(root.begin(), root.end(), path.begin(), path.end()).first == root.end();
}

// Adds the files below a checkpoint folder to a source (FromFolder).
class FolderWalk {
 public:
  FolderWalk(const fs::path& folder, CheckpointSource::Symlinks symlinks, CheckpointSource& source)
      : folder_(folder), symlinks_(symlinks), source_(source) {}

  // Adds what the folder `dir` holds, whose real path is `real` (canonical),
  // under paths starting with `prefix` ("" or ending in '/').
  Status Walk(const fs::path& dir, const fs::path& real, const std::string& prefix) {
    walking_.push_back(real);
    Status walked = WalkEntries(dir, real, prefix);
    walking_.pop_back();
    return walked;
  }

 private:
  Status WalkEntries(const fs::path& dir, const fs::path& real, const std::string& prefix) {
    std::error_code error;
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      const fs::path& path = it->path();
      const std::string relative = prefix + path.filename().string();
      // The marker a restore leaves belongs to the folder, not to the checkpoint.
      if (relative == kRestoreMarkerName) continue;
      fs::file_status own = it->symlink_status(error);
      if (error) break;
      if (fs::is_symlink(own)) {
        SPOOL_RETURN_IF_ERROR(Link(path, relative));
      } else if (fs::is_directory(own)) {
        SPOOL_RETURN_IF_ERROR(Walk(path, real / path.filename(), relative + "/"));
      } else if (fs::is_regular_file(own)) {
        source_.AddFile(relative, path);
      } else {
        return SpecialFile(path, relative);
      }
    }
    if (error) return ErrnoStatus(error.value(), "checkpoint source " + dir.string(), "list");
    return OkStatus();
  }

  Status Link(const fs::path& link, const std::string& relative) {
    std::error_code error;
    const fs::path target = fs::canonical(link, error);
    if (error) {
      std::error_code ignored;
      return Refuse(relative, "is a symbolic link to " + fs::read_symlink(link, ignored).string() +
                                  ", which cannot be reached (" + error.message() + "); remove it, or point it at a file");
    }
    const fs::file_status status = fs::status(target, error);
    if (fs::is_directory(status)) {
      if (symlinks_ != CheckpointSource::Symlinks::kFollow) {
        return Refuse(relative, "is a symbolic link to the folder " + target.string() +
                                    ", whose files are not saved; copy them into the folder, " + std::string(kFollowHint));
      }
      for (const fs::path& folder : walking_) {
        if (IsWithin(folder, target)) {
          return Refuse(relative, "is a symbolic link to " + target.string() +
                                      ", a folder that holds it (a loop); remove the link");
        }
      }
      return Walk(target, target, relative + "/");
    }
    if (!fs::is_regular_file(status)) return SpecialFile(target, relative);
    if (symlinks_ != CheckpointSource::Symlinks::kFollow && !IsWithin(target, walking_.front())) {
      return Refuse(relative, "is a symbolic link to " + target.string() +
                                  ", outside the folder; copy that file into the folder, " + std::string(kFollowHint));
    }
    source_.AddFile(relative, target);  // the file checked, even if the link changes
    return OkStatus();
  }

  Status SpecialFile(const fs::path& path, const std::string& relative) {
    struct stat st;
    std::string what = ::stat(path.c_str(), &st) == 0 ? DescribeSpecialFile(st.st_mode) : "not a regular file";
    return Refuse(relative, "is " + what + ", not a file that can be saved; move it out of the folder");
  }

  Status Refuse(const std::string& relative, const std::string& why) const {
    return InvalidArgumentError("checkpoint source " + folder_.string() + ": " + relative + " " + why);
  }

  const fs::path& folder_;  // as the caller gave it, for messages
  const CheckpointSource::Symlinks symlinks_;
  CheckpointSource& source_;
  std::vector<fs::path> walking_;  // the real folders being walked, the checkpoint folder first
};

}  // namespace

Result<CheckpointSource> CheckpointSource::FromFolder(const fs::path& folder, Symlinks symlinks) {
  std::error_code error;
  const fs::file_status status = fs::status(folder, error);
  if (status.type() == fs::file_type::not_found) {
    return NotFoundError("checkpoint source " + folder.string() +
                         " does not exist; give the folder that holds the files to save");
  }
  if (error) return ErrnoStatus(error.value(), "checkpoint source " + folder.string(), "stat");
  if (!fs::is_directory(status)) {
    return InvalidArgumentError("checkpoint source " + folder.string() +
                                " is not a folder; give the folder that holds the files to save");
  }
  const fs::path real = fs::canonical(folder, error);
  if (error) return ErrnoStatus(error.value(), "checkpoint source " + folder.string(), "resolve");
  CheckpointSource source;
  source.folder_ = fs::absolute(folder).lexically_normal();
  SPOOL_RETURN_IF_ERROR(FolderWalk(folder, symlinks, source).Walk(folder, real, ""));
  // A stable order makes manifests of identical folders identical.
  std::sort(source.entries_.begin(), source.entries_.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  return source;
}

CheckpointSource& CheckpointSource::AddFile(std::string path, fs::path local_file) {
  entries_.push_back(Entry{std::move(path), std::move(local_file)});
  return *this;
}

CheckpointSource& CheckpointSource::AddBuffer(std::string path, std::string bytes) {
  entries_.push_back(Entry{std::move(path), std::move(bytes)});
  return *this;
}

CheckpointSource& CheckpointSource::AddBufferView(std::string path, std::string_view bytes) {
  entries_.push_back(Entry{std::move(path), bytes});
  return *this;
}

void CheckpointSource::OwnBuffers() {
  for (Entry& entry : entries_) {
    if (const auto* view = std::get_if<std::string_view>(&entry.content)) entry.content = std::string(*view);
  }
}

std::optional<std::string_view> CheckpointSource::Entry::bytes() const {
  if (const auto* owned = std::get_if<std::string>(&content)) return std::string_view(*owned);
  if (const auto* view = std::get_if<std::string_view>(&content)) return *view;
  return std::nullopt;
}

Status CheckpointSource::Validate() const {
  std::vector<CheckpointFile> files;
  files.reserve(entries_.size());
  for (const Entry& entry : entries_) files.push_back(CheckpointFile{entry.path, 0, 0});
  return ValidateCheckpointFiles(files);
}

Status CheckpointSource::Capture(const fs::path& staging, bool always_copy) {
  std::error_code error;
  if (!fs::create_directories(staging, error) && error) {
    return UnavailableError("cannot create the staging folder " + staging.string() + ": " + error.message());
  }
  int index = 0;
  for (Entry& entry : entries_) {
    auto* file = std::get_if<fs::path>(&entry.content);
    if (file == nullptr) continue;
    // Flat numbered names: entry paths are validated later, never trusted here.
    fs::path staged = staging / std::to_string(index++);
    error.clear();
    // A link to a symlink would follow whatever it points to later: copy those.
    bool link = !always_copy && !fs::is_symlink(*file, error);
    if (link) fs::create_hard_link(*file, staged, error);
    if (!link || error) {
      error.clear();
      fs::copy_file(*file, staged, fs::copy_options::overwrite_existing, error);
      if (error) {
        return UnavailableError("cannot capture checkpoint file " + file->string() + " into " + staging.string() +
                                ": " + error.message());
      }
    }
    *file = staged;
  }
  return OkStatus();
}

}  // namespace spool::checkpoint
