// LocalStore: the local filesystem as an ObjectStore ("file:///abs/path" and
// plain paths). The embedded default backend.
//
// Bound to the filesystem root: a key is an absolute path without its
// leading '/'. Keys with "." or ".." segments, empty segments or NUL bytes
// are InvalidArgument.
//
// Writes go to a hidden temporary file in the target's folder (parent
// folders are created), which Close fsyncs and renames into place, so no
// reader ever sees a partial file; Abort or destruction removes it.
// if_not_exists commits with an atomic no-replace rename: AlreadyExists.
//
// List treats folders as prefixes, in byte order of the full key like S3:
// with delimiter "/" it returns the files and subfolders ("dir/") of the
// prefix's folder whose names start with the rest of the prefix; without a
// delimiter it walks recursively (following symbolic links, never in a loop).
// Temporary files are not listed. Other entries that are neither regular
// files nor folders (FIFOs, sockets, devices, symbolic links to nothing or
// that loop) are not objects: they come in ListPage::skipped, saying what
// each is. An empty folder shows as a common prefix. The page token is the
// last key returned.
//
// Reads are pinned to the file opened: a file replaced by rename keeps
// serving its old content through the open handle; a file changed in place
// (size or mtime differ) makes ReadAt fail with FailedPrecondition.
// crc32c is not stored (std::nullopt). Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "spool/core/storage/object_store.h"

namespace spool {

class LocalStore : public ObjectStore {
 public:
  LocalStore() = default;

  std::string Describe(std::string_view key) const override;  // "/" + key
  Result<ObjectInfo> Stat(std::string_view key) override;
  Result<ListPage> List(const ListOptions& options) override;
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override;
  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key,
                                                    const WriteOptions& options = {}) override;
  Status Delete(std::string_view key) override;
  // The temporary files of writers that never closed (a killed process),
  // found by walking the folders under `prefix`; their age is the file's
  // mtime. Aborting one deletes that temporary file, nothing else.
  Result<std::vector<IncompleteUpload>> ListIncompleteUploads(std::string_view prefix) override;
  Status AbortIncompleteUpload(const IncompleteUpload& upload) override;
};

}  // namespace spool
