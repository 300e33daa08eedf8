// What a checkpoint is saved from: a local folder, a list of local files, or
// in-memory buffers (mixed freely), each entry under a relative path.
//
// A CheckpointSource is a value. Buffers are owned by it (move them in);
// files are referenced by path and read during the save. Not thread-safe.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "spool/core/status.h"

namespace spool {

class CheckpointSource {
 public:
  struct Entry {
    std::string path;  // relative path inside the checkpoint, '/'-separated
    // A local file to read, or the bytes themselves.
    std::variant<std::filesystem::path, std::string> content;
  };

  CheckpointSource() = default;

  // Every regular file below `folder`, under its path relative to `folder`.
  // Symbolic links are followed for files (their target's bytes are saved)
  // but never for folders. InvalidArgument if `folder` is not a folder.
  // The marker an earlier restore left at the top (kRestoreMarkerName) is
  // not part of the checkpoint and is skipped.
  static Result<CheckpointSource> FromFolder(const std::filesystem::path& folder);

  // Adds one local file, saved as `path`.
  CheckpointSource& AddFile(std::string path, std::filesystem::path local_file);
  // Adds bytes, saved as `path` (pass an rvalue to avoid a copy).
  CheckpointSource& AddBuffer(std::string path, std::string bytes);

  const std::vector<Entry>& entries() const { return entries_; }
  // The folder given to FromFolder (empty otherwise).
  const std::filesystem::path& folder() const { return folder_; }
  bool empty() const { return entries_.empty(); }

  // Every path valid and unique (see ValidateCheckpointPath).
  Status Validate() const;

  // Makes this source independent of later changes to its local files, for a
  // save that continues in the background: hard-links every file into
  // `staging` (a new folder this call creates), copying where a link is not
  // possible (another filesystem, no permission) or `always_copy` is set.
  // Buffers are already owned and stay in memory. A hard link shares the
  // file's bytes, so it protects against files being replaced or deleted
  // (TensorFlow writes a new file and renames it) but not against writes into
  // the same file in place: use always_copy for trainers that do that.
  Status Capture(const std::filesystem::path& staging, bool always_copy);

 private:
  std::vector<Entry> entries_;
  std::filesystem::path folder_;
};

}  // namespace spool
