// S3Store: the ObjectStore of one S3 bucket (AWS, MinIO, Ceph RGW, any
// S3-compatible service).
//
// - Reads are pinned to the ETag seen at open (If-Match): an object replaced
//   underneath fails with FailedPrecondition. A ReadAt larger than the part
//   size is split into ranged GETs run in parallel on the executor, each
//   written straight into the caller's buffer at its offset. A read of a whole
//   object is checked against the crc32c the server keeps, when it keeps one.
// - Writes buffer one part; objects up to one part go up in a single PUT,
//   larger ones as a multipart upload with up to `concurrency` parts in
//   flight, each part's buffer held under the ByteBudget. Any failure, Abort()
//   or destruction without Close() aborts the upload: nothing becomes visible.
// - Create-only writes use If-None-Match: * on the PUT or on
//   CompleteMultipartUpload. Whether the server honours each is probed once
//   per store with a probe object under ".spool-probe/" (deleted again);
//   where it does not (Ceph RGW 16 honours it on PUT but ignores it on
//   Complete), such writes fail with Unimplemented instead of silently
//   overwriting: at OpenWrite, or when the object outgrows one part.
//
// Thread-safe; readers may be used from many threads, writers from one.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "spool/core/env.h"
#include "spool/core/executor.h"
#include "spool/core/storage/object_store.h"
#include "spool/s3/client.h"
#include "spool/s3/config.h"
#include "spool/s3/s3_writer.h"

namespace spool::s3 {

class S3Store : public ObjectStore {
 public:
  // Resolves configuration and credentials (see config.h and
  // credential_chain.h) for `bucket`. Does not contact the server.
  static Result<std::shared_ptr<S3Store>> Open(const std::string& bucket, const S3Options& options,
                                               const Env& env = CurrentEnv());

  S3Store(std::shared_ptr<S3Client> client, Executor* executor, ByteBudget* budget);

  std::string Describe(std::string_view key) const override;
  Result<ObjectInfo> Stat(std::string_view key) override;
  Result<ListPage> List(const ListOptions& options) override;
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override;
  // An object of at most one part is read straight from the listing, with
  // one GET (which brings the server's CRC32C, where it keeps one, to
  // check); so is a larger one whose CRC32C the caller gives (a dataset
  // manifest records it): its parallel ranged reads are checked against
  // that. A larger one without it, or an empty one, is opened with a HEAD,
  // as OpenRead does, to learn the CRC32C. Without an ETag (a manifest gives
  // only the size), the reads are pinned to the size: see
  // GetOptions::object_size.
  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed) override;
  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key, const WriteOptions& options = {}) override;
  // The token names the multipart upload (S3ResumeToken); it is checked with
  // ListParts before reuse. Create-only writes do not resume.
  Result<std::unique_ptr<WritableObject>> OpenResumableUpload(std::string_view key, const WriteOptions& options,
                                                              const ResumeOptions& resume) override;
  Status DiscardResumableUpload(std::string_view key, const std::string& token) override;
  bool resumable_uploads() const override { return true; }
  Status Delete(std::string_view key) override;
  // In batches of 1,000 (S3's limit per DeleteObjects call).
  Result<std::vector<DeleteFailure>> DeleteMany(const std::vector<std::string>& keys) override;
  // Server-side: CopyObject up to 5 GiB, UploadPartCopy in parts beyond.
  Result<ObjectInfo> Copy(std::string_view from_key, std::string_view to_key) override;

  // Multipart uploads under `prefix` never completed or aborted
  // (ListMultipartUploads, every page), and AbortMultipartUpload of one.
  Result<std::vector<IncompleteUpload>> ListIncompleteUploads(std::string_view prefix) override;
  Status AbortIncompleteUpload(const IncompleteUpload& upload) override;

  // For `spool whoami` / `doctor` / `mb` (store_access.cc): the resolved
  // endpoint, region and addressing; the access key (masked) and where it
  // came from; CreateBucket in the store's region.
  StoreAccess Access() const override;
  Result<StoreIdentity> WhoAmI() override;
  Status CreateBucket(const BucketOptions& options) override;

  S3Client& client() { return *client_; }

 private:
  // Whether the server honours If-None-Match: * (probed once).
  Result<ConditionalCreateSupport> ProbeConditionalCreate();

  const std::shared_ptr<S3Client> client_;
  Executor& executor_;
  ByteBudget& budget_;
  std::mutex probe_mu_;
  std::optional<ConditionalCreateSupport> conditional_create_;
};

}  // namespace spool::s3
