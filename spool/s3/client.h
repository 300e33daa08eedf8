// S3Client: one method per S3 operation on one bucket, each a single HTTP
// exchange signed with SigV4 and retried through spool::Retry (never a whole
// multi-step operation). Errors come from errors.h: they name the operation,
// s3://bucket/key, the endpoint and the access key id.
//
// Thread-safe: every method may be called from many threads at once. The
// transport and credentials provider are shared and must outlive nothing:
// the client holds them by shared_ptr.
//
// On AWS's own endpoints, an answer saying the bucket lives in another region
// (301 PermanentRedirect or 400 AuthorizationHeaderMalformed with
// x-amz-bucket-region) is followed once: the client switches to that region
// for this and every later request. On custom endpoints the error names the
// region instead.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/http/transport.h"
#include "spool/core/retry.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/core/throttle.h"
#include "spool/s3/config.h"
#include "spool/s3/credentials.h"
#include "spool/s3/errors.h"
#include "spool/s3/sigv4.h"
#include "spool/s3/xml.h"

namespace spool::s3 {

struct PutOptions {
  bool if_none_match = false;  // If-None-Match: * (create only)
  std::string content_type;    // default binary/octet-stream
  // CreateMultipartUpload: the whole object's CRC32C, stored as user
  // metadata (kUploaderCrc32cHeader); PutObject stores the body's own.
  std::optional<uint32_t> crc32c;
};

// The user metadata that carries the CRC32C spool's uploader computed, for
// servers that keep no full-object checksum (Ceph RGW, older MinIO, every
// multipart object without flexible checksums).
inline constexpr std::string_view kUploaderCrc32cHeader = "x-amz-meta-spool-crc32c";

struct GetOptions {
  uint64_t offset = 0;
  uint64_t length = 0;       // bytes wanted; the buffer's size
  std::string if_match;      // the ETag the read is pinned to; empty: none
  bool want_checksum = false;  // x-amz-checksum-mode: ENABLED
  // The buffer is the whole object, as of the ETag in if_match: the first
  // request is a plain GET without a Range header. Ceph RGW serves a ranged
  // GET with two reads from its OSDs (the object's head, then the range) and
  // a plain one with one, which for small objects is half the server's work
  // (docs/performance.md). Ignored without if_match: an object that grew
  // since it was opened must not overflow the buffer.
  bool whole_object = false;
  // The object's size when it was opened, for a read no ETag pins yet
  // (opened from a manifest that gave its size, not its ETag): an answer
  // for an object of another size (Content-Range, or a 200's
  // Content-Length), or a 416 for a range that was inside it, fails with
  // FailedPrecondition. Once an answer came, its ETag pins the attempts
  // that resume the read (GetResult::etag pins the caller's next reads).
  std::optional<uint64_t> object_size;
};

// What a GET that returned the object from byte 0 in one answer says about
// the whole object's checksums, as HeadObject would (the fields of the same
// names in ObjectInfo): for an object opened from a listing, which shows
// none of them.
struct GetResult {
  size_t bytes = 0;                 // bytes written into the buffer
  std::optional<uint32_t> crc32c;   // of the whole object, when the server sent one
  bool crc32c_from_uploader = false;
  std::optional<StoredDigest> digest;
  std::string etag;  // of the object the bytes came from, when the server sent one
};

class S3Client {
 public:
  S3Client(ResolvedConfig config, std::string bucket, std::shared_ptr<HttpTransport> transport,
           std::shared_ptr<CredentialsProvider> credentials);

  const std::string& bucket() const { return bucket_; }
  // As resolved at construction (region() may have moved since).
  const ResolvedConfig& config() const { return config_; }
  // The size of one ranged GET: the configured part size, or the default.
  uint64_t read_part_size() const { return config_.part_size != 0 ? config_.part_size : kDefaultPartSize; }
  std::string region() const;
  std::string Describe(std::string_view key) const;  // "s3://bucket/key"
  // Where requests get their credentials (for `spool whoami` / `doctor`).
  const std::shared_ptr<CredentialsProvider>& credentials() const { return credentials_; }

  // Size, ETag (as version), Last-Modified, the crc32c when the server
  // keeps a full-object one (or spool's uploader stored one), and the
  // digest: another full-object x-amz-checksum-* (never a COMPOSITE one),
  // else the MD5 of a single-part ETag where the answer shows no SSE-KMS,
  // DSSE or SSE-C.
  Result<ObjectInfo> HeadObject(std::string_view key);
  // Reads [offset, offset + buffer.size()) into `buffer`; a broken transfer
  // resumes at the byte it reached, pinned to `if_match`. A changed object
  // is FailedPrecondition. Fewer bytes only at the end of the object.
  Result<GetResult> GetObject(std::string_view key, const GetOptions& options, std::span<char> buffer);
  // Single PUT with x-amz-checksum-crc32c, and Content-MD5 when the payload
  // is unsigned (a signed one is checked by its SHA-256). Returns the ETag.
  Result<std::string> PutObject(std::string_view key, std::string_view body, const PutOptions& options);

  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options);
  // Returns the part's ETag. Checked like a single PUT: by the payload's
  // SHA-256 when signed, by Content-MD5 when not.
  Result<std::string> UploadPart(std::string_view key, const std::string& upload_id, int part_number,
                                 std::string_view body);
  Result<CopyResult> UploadPartCopy(std::string_view from_key, std::string_view key, const std::string& upload_id,
                                    int part_number, uint64_t first_byte, uint64_t last_byte);
  // Returns the ETag the server reported (empty on Ceph RGW).
  Result<std::string> CompleteMultipartUpload(std::string_view key, const std::string& upload_id,
                                              const std::vector<CompletedPart>& parts, bool if_none_match);
  Status AbortMultipartUpload(std::string_view key, const std::string& upload_id);
  Result<ListMultipartUploadsResult> ListMultipartUploads(std::string_view prefix, std::string_view key_marker,
                                                          std::string_view upload_id_marker);
  // Every part the unfinished upload holds (all pages). NotFound
  // (NoSuchUpload) when it was completed, aborted or expired.
  Result<std::vector<UploadedPart>> ListParts(std::string_view key, const std::string& upload_id);

  Result<ListObjectsResult> ListObjectsV2(const ListOptions& options);
  Status DeleteObject(std::string_view key);
  // At most 1,000 keys (S3's limit); returns the keys that failed.
  Result<std::vector<DeleteObjectsError>> DeleteObjects(const std::vector<std::string>& keys);
  Result<CopyResult> CopyObject(std::string_view from_key, std::string_view to_key);

  // CreateBucket for this client's bucket, in its region (a
  // LocationConstraint outside us-east-1). A bucket that exists already is
  // AlreadyExists (BucketAlreadyOwnedByYou / BucketAlreadyExists).
  Status CreateBucket();

  // A presigned GET URL for `key`, valid for `expires`.
  Result<std::string> PresignGet(std::string_view key, std::chrono::seconds expires);

 private:
  struct Request;
  Result<HttpResponse> SendOnce(const Request& request, ResponseSink* sink);
  // Retried exchange whose 2xx body (if any) is collected into `body`.
  Result<HttpResponse> Send(const Request& request, std::string* body);
  // For a HEAD refused with 400 or 403 (no body, so no error code): the
  // error of a 1-byte GET of the same key, which names the cause; else `head`.
  Status ExplainHeadRefusal(std::string_view key, const Status& head);
  // Where requests go: the configured region and endpoint, until a
  // wrong-region answer moves them.
  struct Location {
    std::string region;
    Endpoint endpoint;
  };
  Location CurrentLocation() const;
  // Switches to the region a wrong-region answer names; false if there is
  // nothing to follow.
  bool FollowRegion(const HttpResponse& response, const Location& used);
  // Host and path for `key` ("" for the bucket).
  void Address(const Endpoint& endpoint, std::string_view key, std::string* host, std::string* path) const;
  ErrorContext Context(const Request& request, const Endpoint& endpoint, const std::string& access_key_id) const;

  const ResolvedConfig config_;
  const std::string bucket_;
  const std::shared_ptr<HttpTransport> transport_;
  const std::shared_ptr<CredentialsProvider> credentials_;
  mutable std::mutex location_mu_;
  Location location_;
  // The retry quota and concurrency limit of this bucket, shared by the
  // process's clients of it (core/throttle.h).
  const std::shared_ptr<RetryThrottle> throttle_;
};

}  // namespace spool::s3
