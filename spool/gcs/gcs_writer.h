// The WritableObject of GcsStore: buffers small objects for one multipart
// upload, and streams large ones (or all, when asked) through a resumable
// session. Nothing is visible until Close succeeds; Abort or destruction
// without Close cancels a resumable session. Not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "spool/gcs/client.h"
#include "spool/gcs/gcs_store.h"
#include "spool/gcs/resumable_upload.h"

namespace spool::gcs {

struct WriterSettings {
  uint64_t resumable_threshold = 8ull << 20;
  ResumableUploadOptions resumable;
};

class GcsWriterImpl : public GcsWriter {
 public:
  // A new write; `resumable` starts the session at once. With `resume`, a
  // resumable write continues from that state instead.
  static Result<std::unique_ptr<GcsWriter>> Create(std::shared_ptr<GcsClient> client, std::string bucket,
                                                   std::string key, WriteOptions options, WriterSettings settings,
                                                   bool resumable,
                                                   std::optional<ResumableUploadState> resume = std::nullopt);
  ~GcsWriterImpl() override;

  Status Append(std::string_view data) override;
  Result<ObjectInfo> Close() override;
  void Abort() override;
  uint64_t bytes_appended() const override;
  std::string session_uri() const override;
  Result<ResumableUploadState> Suspend() override;

 private:
  GcsWriterImpl(std::shared_ptr<GcsClient> client, std::string bucket, std::string key, WriteOptions options,
                WriterSettings settings);
  Status StartResumable(std::optional<ResumableUploadState> resume);
  Result<ObjectMetadata> CommitSmall();
  // After an attempt whose outcome is unknown: does the object hold exactly
  // what this write sent (size, CRC32C, content type)?
  bool IsOurs(const ObjectMetadata& stored, uint32_t crc, uint64_t size) const;
  Status CreateOnlyConflict(const Status& status) const;
  Preconditions WritePreconditions() const;

  std::shared_ptr<GcsClient> client_;
  const std::string bucket_;
  const std::string key_;
  const std::string url_;
  const WriteOptions options_;
  const WriterSettings settings_;
  std::string buffer_;
  std::unique_ptr<ResumableUpload> upload_;
  bool done_ = false;  // closed, aborted or suspended
};

}  // namespace spool::gcs
