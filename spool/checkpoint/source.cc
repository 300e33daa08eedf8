#include "spool/checkpoint/source.h"

#include <algorithm>
#include <system_error>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/checkpoint/manifest.h"

namespace spool {

namespace fs = std::filesystem;

Result<CheckpointSource> CheckpointSource::FromFolder(const fs::path& folder) {
  std::error_code error;
  if (!fs::is_directory(folder, error)) {
    return InvalidArgumentError("checkpoint source " + folder.string() + " is not a folder");
  }
  CheckpointSource source;
  source.folder_ = fs::absolute(folder).lexically_normal();
  fs::recursive_directory_iterator it(folder, fs::directory_options::none, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_symlink(error) && it->is_directory(error)) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(error)) continue;
    // The marker a restore leaves belongs to the folder, not to the checkpoint.
    if (it.depth() == 0 && it->path().filename() == kRestoreMarkerName) continue;
    source.AddFile(it->path().lexically_relative(folder).generic_string(), it->path());
  }
  if (error) {
    return UnavailableError("cannot list checkpoint source " + folder.string() + ": " + error.message());
  }
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

}  // namespace spool
