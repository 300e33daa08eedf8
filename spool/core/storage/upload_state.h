// UploadStateFile: what an upload from a local file keeps on disk so that,
// when its process is killed, the next upload of the same file to the same
// object continues it (ObjectStore::OpenResumableUpload) instead of starting
// from zero. Used by UploadFile with TransferOptions::resume (`spool cp`,
// `cp -r` and `sync`; `--no-resume` turns it off).
//
// Where: one small text file per destination under UploadStateFolder():
// $XDG_CACHE_HOME/spool/uploads, else ~/.cache/spool/uploads. The folder is
// made 0700 and each file 0600: a GCS token is a session URI, which lets its
// holder write the object (a capability, not a credential). No credential
// is written. A file is replaced atomically (a temporary file renamed over
// it) and removed once the upload commits, fails or is cancelled: only a
// process that dies leaves one. A file whose upload the server no longer
// knows (aborted by `spool gc-uploads`, expired) is harmless: the next run
// starts anew.
//
// Concurrency: Open takes an exclusive flock on "<file>.lock" for as long as
// the UploadStateFile lives, so two uploads to one destination never share
// an upload; the second runs without resuming (locked() is false). Lock
// files stay (empty, one per destination ever uploaded resumably): removing
// one while another process waits on it would let two hold "the" lock.
//
// Not thread-safe; Save may be called from a store's threads, one at a time
// (ResumeOptions::on_token).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "spool/core/status.h"

namespace spool {

// What identifies the upload being kept, and the store's token for it.
struct UploadRecord {
  std::string destination;  // the object's URL
  std::string source;       // the file's absolute path
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t crc32c = 0;      // of the whole file
  std::string token;        // ResumeOptions::token

  // The same file, unchanged since the upload started.
  bool SameSource(const UploadRecord& other) const {
    return destination == other.destination && source == other.source && size == other.size &&
           mtime_ns == other.mtime_ns && crc32c == other.crc32c;
  }
};

// $XDG_CACHE_HOME/spool/uploads, else $HOME/.cache/spool/uploads; empty
// when neither variable is set (then nothing is kept).
std::filesystem::path UploadStateFolder();

class UploadStateFile {
 public:
  // The file for `destination` in `folder`, made if needed. An error when
  // the folder cannot be made or locked (the caller uploads without
  // resuming).
  static Result<UploadStateFile> Open(const std::string& destination, const std::filesystem::path& folder);
  UploadStateFile(UploadStateFile&& other) noexcept;
  UploadStateFile& operator=(UploadStateFile&&) = delete;
  ~UploadStateFile();  // releases the lock

  // False when another process holds this destination's lock.
  bool locked() const { return lock_fd_ >= 0; }
  // The record kept for this destination; nullopt when there is none or it
  // is not readable as one (it is then ignored).
  std::optional<UploadRecord> Load() const;
  Status Save(const UploadRecord& record);
  void Remove();
  const std::filesystem::path& path() const { return path_; }

 private:
  UploadStateFile(std::filesystem::path path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}

  std::filesystem::path path_;
  int lock_fd_ = -1;
};

}  // namespace spool
