// GcsClient: one method per Cloud Storage JSON API operation spool uses.
//
// Each method is one HTTP exchange (one object, one page, one chunk), and
// this client is the only layer that retries it: every method goes through
// one helper that runs the exchange inside spool::Retry with the options'
// RetryOptions, so callers never wrap a method in a retry loop of their own.
// Whether an exchange may be repeated is derived from the request itself
// (IdempotencyOf): reads, lists and metadata always; a write or delete only
// with an ifGenerationMatch / ifMetagenerationMatch precondition (a repeat
// then answers 412 instead of acting twice), so an unconditional insert or
// delete is tried once. Resumable-session steps (UploadChunk, QueryUpload,
// CancelUpload) are single attempts: the resumable protocol's recovery
// (ask the session, send the rest) belongs to resumable_upload.h. A 401 with
// a cached token refreshes the token once within the same attempt. Errors
// come from gcs/errors.h and name the gs:// URL. Thread-safe: one client
// serves many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "spool/core/http/transport.h"
#include "spool/core/retry.h"
#include "spool/core/status.h"
#include "spool/core/throttle.h"
#include "spool/gcs/credentials.h"
#include "spool/gcs/resources.h"

namespace spool::gcs {

inline constexpr std::string_view kDefaultEndpoint = "https://storage.googleapis.com";

struct ClientOptions {
  // scheme://host[:port] of the service; the JSON API lives under
  // /storage/v1 and uploads under /upload/storage/v1.
  std::string endpoint = std::string(kDefaultEndpoint);
  std::shared_ptr<HttpTransport> transport;  // required
  std::shared_ptr<Credentials> credentials;  // required (anonymous for none)
  RetryOptions retry;
  // The retry quota and concurrency limit (core/throttle.h); null: the
  // process's one for this endpoint, made by the client.
  std::shared_ptr<RetryThrottle> throttle;
};

// Preconditions: https://cloud.google.com/storage/docs/request-preconditions
// if_generation_match = 0 means "only if the object does not exist".
struct Preconditions {
  std::optional<int64_t> if_generation_match;
  std::optional<int64_t> if_generation_not_match;
  std::optional<int64_t> if_metageneration_match;
};

// A write or delete carrying a generation or metageneration match is safe
// to repeat (a repeat after a lost success fails with 412 rather than acting
// twice); without one it is not. ifGenerationNotMatch does not make it safe.
Idempotency IdempotencyOf(const Preconditions& preconditions);

// How many attempts a retried exchange made, for a caller that must tell
// "someone else's object" from "our own earlier attempt whose answer was
// lost" after a 412 (more than one attempt: it may be ours).
struct Attempts {
  int count = 0;
};

struct ListObjectsRequest {
  std::string prefix;
  std::string delimiter;
  std::string page_token;
  int max_results = 1000;
  // Partial response; empty: the full resources.
  std::string fields = "items(name,size,generation,metageneration,crc32c,md5Hash,updated),prefixes,nextPageToken";
};

// A media download of [offset, offset + length) (length empty: to the end).
struct ReadObjectRequest {
  std::string bucket;
  std::string name;
  std::optional<int64_t> if_generation_match;  // pins the read to one generation
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  // The object's size when it was opened, for a read no generation pins
  // (opened from a dataset manifest, which gives the size): an answer for
  // an object of another size, or a 416 for a range inside that size, is
  // FailedPrecondition. A rewrite of the same size is the caller's checksum's
  // to see.
  std::optional<uint64_t> object_size;
};

struct ReadObjectResult {
  uint64_t bytes = 0;  // delivered to the callback
  int64_t generation = 0;
  std::optional<uint32_t> crc32c;  // x-goog-hash of the whole object
};

// Where a resumable session stands.
struct UploadStatus {
  uint64_t committed = 0;                 // bytes the service has persisted
  std::optional<ObjectMetadata> object;   // set once the upload is finalized
};

class GcsClient {
 public:
  explicit GcsClient(ClientOptions options);

  const ClientOptions& options() const { return options_; }
  // "gs://bucket/name", for messages.
  static std::string Url(std::string_view bucket, std::string_view name);

  // buckets.insert (used by tests and tools; projects are ignored by emulators).
  Status InsertBucket(std::string_view bucket, std::string_view project);

  // objects.get
  Result<ObjectMetadata> GetObject(std::string_view bucket, std::string_view name,
                                   const Preconditions& preconditions = {});

  // objects.get?alt=media: the bytes go to `write` in order. A broken
  // transfer is retried from the byte it reached, against the same
  // generation when pinned (a replaced object then fails with
  // FailedPrecondition, never mixed data).
  Result<ReadObjectResult> ReadObject(const ReadObjectRequest& request,
                                      const std::function<Status(std::string_view)>& write);

  // objects.insert with uploadType=multipart: metadata (with the crc32c the
  // service checks) and data in one request. Retried only under a
  // precondition (IdempotencyOf); `attempts`, when given, receives how many
  // were made.
  Result<ObjectMetadata> InsertObject(std::string_view bucket, const NewObject& object, std::string_view data,
                                      const Preconditions& preconditions, Attempts* attempts = nullptr);

  // Resumable uploads (https://cloud.google.com/storage/docs/performing-resumable-uploads).
  // Starts a session and returns its URI (a capability: keep it private).
  // Retried: a repeat at worst leaves an unused session behind.
  Result<std::string> StartResumableUpload(std::string_view bucket, const NewObject& object,
                                           const Preconditions& preconditions);
  // Sends `data` at `offset`. `total` is the object size when this is the
  // last chunk (then `crc32c` of the whole object goes along as
  // x-goog-hash). Not-last chunks must be a multiple of 256 KiB. One
  // exchange, no retry: after a failure ask QueryUpload where to resume.
  Result<UploadStatus> UploadChunk(const std::string& session_uri, uint64_t offset, std::string_view data,
                                   std::optional<uint64_t> total, std::optional<uint32_t> crc32c);
  // How much of the session the service has (308 + Range), or its object if
  // finalized. One exchange, no retry.
  Result<UploadStatus> QueryUpload(const std::string& session_uri, std::optional<uint64_t> total = std::nullopt);
  // Cancels the session (DELETE; the service answers 499).
  Status CancelUpload(const std::string& session_uri);

  // objects.list, one page.
  Result<ObjectListPage> ListObjects(std::string_view bucket, const ListObjectsRequest& request);

  // objects.delete. NotFound is reported (the store decides what it means).
  // Retried only under a precondition (IdempotencyOf).
  Status DeleteObject(std::string_view bucket, std::string_view name, const Preconditions& preconditions,
                      Attempts* attempts = nullptr);

  // objects.rewrite, one call; pass the previous call's rewrite_token to go on.
  // Retried when the destination has a precondition or the source
  // generation is pinned (a repeat then writes the same bytes again).
  Result<RewriteProgress> RewriteObject(std::string_view source_bucket, std::string_view source_name,
                                        std::optional<int64_t> source_generation, std::string_view bucket,
                                        std::string_view name, const std::string& rewrite_token,
                                        const Preconditions& preconditions);

 private:
  // Adds the Authorization header, sends, and on a 401 with a token
  // refreshes it and sends once more.
  Result<HttpResponse> Send(HttpRequest& request, ResponseSink* sink);
  // One JSON API attempt: sends `request` and returns its 2xx body, or the
  // mapped error.
  Result<std::string> ExchangeJson(HttpRequest& request, const std::string& what);
  std::string ObjectUrl(std::string_view bucket, std::string_view name) const;

  ClientOptions options_;
};

}  // namespace spool::gcs
