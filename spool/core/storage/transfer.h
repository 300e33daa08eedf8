// Moving whole objects and files: the building blocks of `spool cp`, the
// checkpoint manager and the benchmarks.
//
// Large objects are read with parallel ranged ReadAt calls, one request per
// part (see TransferOptions), and written with one streaming WritableObject (which itself uploads parts in parallel
// where the backend can), bounded by the ByteBudget. Every function is safe to call from many threads; each call waits
// for its own work through a TaskGroup.
//
// Cancellation: each call runs under the caller's current CancelToken
// (core/cancel.h). Once it is cancelled a call stops within about a second
// and commits nothing: the destination writer aborts (an S3 multipart upload
// is aborted, a GCS session cancelled), a download's temporary file is
// removed, and the call returns Cancelled.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "spool/core/executor.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool {

struct TransferOptions {
  // Reads are split as the source reader splits them
  // (ReadableObject::ranged_reads(), core/storage/ranged_reads.h), so that
  // each part is one request and nothing is split twice. part_size, when
  // set, asks for smaller parts (a larger value is capped at the reader's);
  // concurrency, when set, replaces the reader's parts in flight. 0: the
  // reader's. UploadFile reads its file in pieces of part_size (0: 16 MiB).
  uint64_t part_size = 0;
  int concurrency = 0;
  Executor* executor = nullptr;   // default: DefaultExecutor()
  ByteBudget* budget = nullptr;   // default: DefaultByteBudget()
  WriteOptions write;             // for the destination object
  // What a listing said about the source object, when the caller listed it:
  // opened with OpenListed, a small object is read without a metadata
  // request first (half the requests for a folder of small files).
  std::optional<ObjectInfo> listed;
  // Called from any thread with bytes just moved (for progress bars).
  std::function<void(uint64_t)> on_progress;
  // UploadFile of a file larger than one part: keep what a killed upload
  // needs to continue (core/storage/upload_state.h) and continue one that
  // the same file left on the same object. Off by default: the CLI's cp,
  // cp -r and sync turn it on (--no-resume turns it off).
  bool resume = false;
  // DownloadFile: fsync the file before renaming it into place, and its
  // folder after, so that a download survives a power loss once the call
  // returns. Off by default, as in the AWS CLI, rclone and gsutil (the
  // rename alone already hides a partial file from readers); checkpoint
  // restores turn it on, and `spool cp/sync --fsync` (docs/integrity.md).
  bool durable = false;
};

// Reads [offset, offset + buffer.size()) of `object` into `buffer` with
// parallel ranged reads. Returns the bytes read (short only at the end).
Result<size_t> ReadParallel(ReadableObject& object, uint64_t offset, std::span<char> buffer,
                            const TransferOptions& options = {});

// Copies an object between any two stores (or within one), streaming.
// The bytes read are checked against the source's crc32c, else its digest
// (storage/verify.h), and the crc32c against what was written where the
// destination knows it; a mismatch is DataLoss and commits nothing.
Result<ObjectInfo> CopyObject(ObjectStore& from, std::string_view from_key, ObjectStore& to,
                              std::string_view to_key, const TransferOptions& options = {});

// Uploads a local file; returns the stored object's info, including the
// crc32c computed while reading the file. With options.resume, an upload
// that a killed process left for the same file (same path, size, mtime and
// CRC32C) and object is continued, sending only what the server lacks; one
// left for a file that changed is ended (DiscardResumableUpload) and the
// upload starts anew.
Result<ObjectInfo> UploadFile(const std::filesystem::path& path, ObjectStore& to, std::string_view key,
                              const TransferOptions& options = {});

// Downloads an object to `path` through a temporary file in the same folder,
// renamed into place only when complete and checked against the object's
// crc32c, else its digest (then the file is read back and hashed in order
// after its parts are written); a mismatch is DataLoss and leaves nothing.
// Durable on disk only with options.durable. Returns the info with the
// crc32c computed over the bytes written.
Result<ObjectInfo> DownloadFile(ObjectStore& from, std::string_view key, const std::filesystem::path& path,
                                const TransferOptions& options = {});

// One end of a copy between locations.
struct ObjectEnd {
  ObjectStore* store = nullptr;  // not owned; outlives the call
  std::string key;
  bool local = false;  // a file:// store: key is the path without its leading '/'
};

// Copies one object between any two locations the fastest way the two ends
// allow: download to a file when the destination is local, upload from a
// file when the source is, a server-side ObjectStore::Copy within one store
// (falling back when the store has none), else a streamed CopyObject.
// InvalidArgument when both ends are the same object.
Result<ObjectInfo> CopyObjectBetween(const ObjectEnd& from, const ObjectEnd& to, const TransferOptions& options = {});

}  // namespace spool
