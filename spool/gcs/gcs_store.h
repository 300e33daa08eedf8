// GcsStore: ObjectStore over the Cloud Storage JSON API, bound to one bucket.
//
// Reads are pinned to the generation seen at open (ifGenerationMatch), split
// into parallel ranged downloads for large buffers, and checked against the
// object's CRC32C whenever one ReadAt covers the whole object (DataLoss on a
// mismatch). Writes buffer up to resumable_threshold and go out as one
// multipart upload (metadata with the CRC32C, checked by the service), or
// else as a resumable upload with chunks in flight in parallel with Append.
// if_not_exists writes use ifGenerationMatch=0 (AlreadyExists when taken).
//
// Thread-safe. The store shares one HTTP transport (connection pool) and one
// Credentials object among all its operations.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "spool/core/executor.h"
#include "spool/core/http/transport.h"
#include "spool/core/retry.h"
#include "spool/core/storage/object_store.h"
#include "spool/core/storage/ranged_reads.h"
#include "spool/gcs/client.h"
#include "spool/gcs/credentials.h"
#include "spool/gcs/resumable_upload.h"

namespace spool::gcs {

struct GcsStoreOptions {
  std::string bucket;
  // Empty: STORAGE_EMULATOR_HOST when set (then without credentials, as
  // Google's libraries do), else https://storage.googleapis.com.
  std::string endpoint;
  // Empty: anonymous when `anonymous` or an emulator, else the Application
  // Default Credentials chain (default_credentials.h).
  std::shared_ptr<Credentials> credentials;
  bool anonymous = false;
  std::shared_ptr<HttpTransport> transport;  // empty: libcurl with `http`
  // Where every exchange (token fetches included) is counted, by operation
  // (core/request_counters.h); empty: not counted.
  std::shared_ptr<RequestCounters> counters;
  HttpOptions http;
  Executor* executor = nullptr;  // default: DefaultExecutor()
  ByteBudget* budget = nullptr;  // default: DefaultByteBudget()
  // Every request of the store and of its credentials retries with these
  // (the environment lets tests run the backoff on a fake clock).
  RetryOptions retry;

  uint64_t resumable_threshold = 8ull << 20;  // larger objects use a resumable upload
  uint64_t chunk_size = 16ull << 20;          // resumable chunk (multiple of 256 KiB)
  int chunks_in_flight = 4;
  // How a large ReadAt is split into ranged downloads (8 MiB, 8 at once).
  RangedReads reads;
};

// A write to GCS; resumable ones can be suspended and continued elsewhere.
class GcsWriter : public WritableObject {
 public:
  // The resumable session's URI ("" while the write is still buffered for a
  // multipart upload).
  virtual std::string session_uri() const = 0;
  // Resumable writes only: sends every whole 256 KiB unit appended so far
  // and returns the state to persist (ResumableUploadState::Serialize) for
  // GcsStore::ResumeWrite. The writer is finished afterwards and does not
  // cancel the session when destroyed.
  virtual Result<ResumableUploadState> Suspend() = 0;
};

class GcsStore : public ObjectStore {
 public:
  static Result<std::shared_ptr<GcsStore>> Open(GcsStoreOptions options);

  std::string Describe(std::string_view key) const override;
  Result<ObjectInfo> Stat(std::string_view key) override;
  Result<ListPage> List(const ListOptions& options) override;
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override;
  // An object of at most one part is read straight from what the listing
  // said (its generation pins the read) or the dataset manifest said (its
  // size pins it), with one download and no metadata request; the
  // download's x-goog-hash brings the CRC32C a whole read is checked
  // against. A larger object is opened the same way when its CRC32C is
  // given (a listing always gives it, a manifest may), and its ranges are
  // checked against that; without it, and an empty object, it is opened as
  // OpenRead does.
  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed) override;
  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key, const WriteOptions& options = {}) override;
  Status Delete(std::string_view key) override;
  Result<std::vector<DeleteFailure>> DeleteMany(const std::vector<std::string>& keys) override;
  Result<ObjectInfo> Copy(std::string_view from_key, std::string_view to_key) override;

  // A write that uses a resumable session from the first byte.
  Result<std::unique_ptr<GcsWriter>> OpenResumableWrite(std::string_view key, const WriteOptions& options = {});
  // Continues a suspended resumable write (maybe of another process): the
  // writer's bytes_appended() is state.committed; append the rest, Close.
  Result<std::unique_ptr<GcsWriter>> ResumeWrite(std::string_view key, const ResumableUploadState& state);
  // ObjectStore's resumable uploads: the token names the session
  // (GcsResumeToken); on reuse the session says how much it holds. A session
  // the service no longer knows starts a new one.
  Result<std::unique_ptr<WritableObject>> OpenResumableUpload(std::string_view key, const WriteOptions& options,
                                                              const ResumeOptions& resume) override;
  Status DiscardResumableUpload(std::string_view key, const std::string& token) override;
  bool resumable_uploads() const override { return true; }

  // For `spool whoami` / `doctor` / `mb` (store_access.cc): the endpoint
  // and credentials; fetching a token; InsertBucket in options.project.
  StoreAccess Access() const override;
  Result<StoreIdentity> WhoAmI() override;
  Status CreateBucket(const BucketOptions& options) override;

  GcsClient& client() { return *client_; }
  const std::string& bucket() const { return options_.bucket; }
  // Which credentials and endpoint this store uses (never a secret).
  std::string DescribeAccess() const;

 private:
  GcsStore(GcsStoreOptions options, std::shared_ptr<GcsClient> client);
  Result<std::unique_ptr<GcsWriter>> MakeWriter(std::string_view key, const WriteOptions& options, bool resumable);

  GcsStoreOptions options_;
  std::shared_ptr<GcsClient> client_;
};

// ObjectInfo from an object resource.
ObjectInfo ToObjectInfo(const ObjectMetadata& object);

}  // namespace spool::gcs
