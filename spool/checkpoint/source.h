// What a checkpoint is saved from: a local folder, a list of local files, or
// in-memory buffers (mixed freely), each entry under a relative path.
//
// A CheckpointSource is a value. Buffers are owned by it (move them in), or
// borrowed (AddBufferView: the caller keeps the bytes alive and unchanged
// until the save returns; SaveAsync copies them first); files are
// referenced by path and read during the save. Not thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "spool/core/status.h"

namespace spool::checkpoint {

class CheckpointSource {
 public:
  struct Entry {
    std::string path;  // relative path inside the checkpoint, '/'-separated
    // A local file to read, the bytes themselves, or borrowed bytes.
    std::variant<std::filesystem::path, std::string, std::string_view> content;

    // The bytes of a buffer entry (owned or borrowed); nullopt for a file.
    std::optional<std::string_view> bytes() const;
  };

  // What FromFolder does with a symbolic link below the folder.
  enum class Symlinks {
    // A link to a file inside the folder is saved, under the link's own
    // path, as the file it points to. Any other link (to a file outside the
    // folder, to a folder) is InvalidArgument naming it and saying how to
    // include it: a save never takes in a file from outside the folder, nor
    // leaves one out, without being told.
    kInsideFolder,
    // Every link is followed, wherever it points (spool ckpt save
    // --follow-symlinks): a link to a file is saved as that file, a link to
    // a folder as the files below it, under the link's path.
    kFollow,
  };

  CheckpointSource() = default;

  // Every file below `folder`, under its path relative to `folder`, symbolic
  // links as `symlinks` says. NotFound if `folder` does not exist;
  // InvalidArgument if it is not a folder, or holds what cannot be saved: a
  // FIFO, socket or device, a link to nothing, a link to a folder that
  // contains it (a loop), or a link `symlinks` refuses; each error names the
  // entry and what to do. The marker an earlier restore left at the top
  // (kRestoreMarkerName) is not part of the checkpoint and is skipped.
  static Result<CheckpointSource> FromFolder(const std::filesystem::path& folder,
                                             Symlinks symlinks = Symlinks::kInsideFolder);

  // Adds one local file, saved as `path`.
  CheckpointSource& AddFile(std::string path, std::filesystem::path local_file);
  // Adds bytes, saved as `path` (pass an rvalue to avoid a copy).
  CheckpointSource& AddBuffer(std::string path, std::string bytes);
  // Adds bytes saved as `path` without copying them: the caller keeps them
  // alive and unchanged until the save that reads them returns (a large
  // buffer, saved without a second copy in memory).
  CheckpointSource& AddBufferView(std::string path, std::string_view bytes);
  // Copies every borrowed buffer into one this source owns, so that it no
  // longer depends on the caller's memory (before a background save).
  void OwnBuffers();

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

}  // namespace spool::checkpoint
