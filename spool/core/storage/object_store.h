// ObjectStore: the one interface records/, the loader, checkpoint/ and the
// CLI use to reach any storage (local files, memory, S3, GCS).
//
// A store is bound to one bucket (or, for local files, the filesystem root)
// and addresses objects by key. Every method is thread-safe. Errors name the
// object's URL (store.Describe(key)) and say what to do.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/digest.h"
#include "spool/core/request_counters.h"
#include "spool/core/status.h"
#include "spool/core/storage/ranged_reads.h"

namespace spool {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  // What pins a read to this version: the ETag (S3), the generation (GCS),
  // size+mtime (local), a counter (memory). Opaque.
  std::string version;
  // The CRC32C of the stored bytes, when known: kept by the service (GCS;
  // S3 full-object checksums), or computed by spool's uploader and stored
  // with the object (S3 user metadata, see crc32c_from_uploader).
  std::optional<uint32_t> crc32c;
  // crc32c came from the uploader (x-amz-meta-spool-crc32c on S3), not from
  // the service: it checks the bytes against what the writer read from its
  // source, which the service itself never confirmed.
  bool crc32c_from_uploader = false;
  // Another checksum of the whole object that its store keeps, when it keeps
  // one: S3, a full-object x-amz-checksum-* of another algorithm, else the
  // MD5 that a single-part object's ETag is (only as HEAD or GET showed it:
  // never from a listing, which does not show whether the object is
  // encrypted, and then its ETag is no MD5); GCS, md5Hash. Whole reads are
  // verified against it when there is no crc32c (storage/verify.h).
  std::optional<StoredDigest> digest;
  std::chrono::system_clock::time_point updated{};
};

struct ListOptions {
  std::string prefix;
  // Empty: list every key under prefix. "/": keys directly under prefix, and
  // the "folders" below it as common_prefixes.
  std::string delimiter;
  std::string page_token;  // from the previous page; empty for the first
  int max_keys = 1000;
};

// What a listing passed over because it is neither an object nor a folder:
// on a local store, a FIFO, socket or device file, or a symbolic link to
// nothing. Listings never return such entries as objects; whoever copies a
// whole folder should say that they were left out.
struct SkippedEntry {
  std::string key;
  std::string what;  // "a FIFO (named pipe)", "a socket", ...: what it is instead
};

struct ListPage {
  std::vector<ObjectInfo> objects;          // in lexicographic key order
  std::vector<std::string> common_prefixes; // each ends with the delimiter
  std::vector<SkippedEntry> skipped;        // in key order; only local stores have any
  std::string next_page_token;              // empty on the last page
};

// An object opened for reading, pinned to the version seen at open: if the
// object is replaced afterwards, ReadAt fails with FailedPrecondition rather
// than mixing versions. ReadAt may be called from many threads at once.
class ReadableObject {
 public:
  virtual ~ReadableObject() = default;
  virtual const ObjectInfo& info() const = 0;
  // Reads up to buffer.size() bytes at `offset`; returns how many were read,
  // which is less than asked only at the end of the object. An offset past
  // the end is OutOfRange; an offset equal to the size reads 0 bytes.
  virtual Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) = 0;
  // Whether a ReadAt that returns the whole object at once has checked it
  // against the object's checksum (VerifyWholeObject in storage/verify.h,
  // or what the response carried for an object opened from a listing) and
  // failed with DataLoss on a mismatch: a caller that read the whole object
  // in one call need not hash it again (S3 and GCS readers).
  virtual bool verifies_whole_reads() const { return false; }
  // How ReadAt splits a large buffer into requests (core/storage/ranged_reads.h):
  // a ReadAt of at most part_size bytes is one request. The default is for
  // stores whose reads are no requests (local files, memory): callers that
  // split reads themselves (transfer.h) use these values for their parts.
  virtual RangedReads ranged_reads() const { return {}; }
  // Whether a ReadAt is a copy out of local memory or files rather than a
  // request (local and memory stores): a reader may then read in pieces as
  // small as it likes, at no cost in requests (chunk_reader.h's blocks).
  // Wrappers that do not say are taken as remote.
  virtual bool reads_are_local() const { return false; }
};

struct WriteOptions {
  // Create-only: fail with AlreadyExists if the key exists at commit (S3
  // If-None-Match: *, GCS ifGenerationMatch=0, exclusive create locally).
  // Unimplemented where the service cannot do it.
  bool if_not_exists = false;
  std::string content_type;
  // The size the caller will write, when known: lets backends choose single
  // PUT vs multipart/resumable up front. Unknown: std::nullopt.
  std::optional<uint64_t> expected_size;
  // The CRC32C of everything that will be appended, when the caller knows
  // it before writing (spool's file uploads read the file once for it).
  // Backends that keep no checksum of their own store it with the object
  // (S3: user metadata) so later reads can verify; the S3 writer then fails
  // Close with DataLoss, committing nothing, if the bytes appended differ.
  // Other backends ignore it.
  std::optional<uint32_t> crc32c;
};

// An object being written. Nothing is visible under the key until Close()
// succeeds; Abort() (or destruction without Close) discards everything: it
// cancels the uploads in flight, waits for them, and removes what the
// service holds (an S3 multipart upload is aborted, a GCS session
// cancelled), even when the caller's work was cancelled. Close() under a
// cancelled token (core/cancel.h) commits nothing; once the request that
// commits has started, it is finished, so the outcome is always known.
// Not thread-safe: one writer thread at a time.
class WritableObject {
 public:
  virtual ~WritableObject() = default;
  virtual Status Append(std::string_view data) = 0;
  // Appending without a copy, for a writer that gathers bytes in buffers of
  // its own (S3 parts): room for up to `max` (> 0) bytes at the end of what
  // was appended, for the caller to fill (a file read goes straight into
  // it), then CommitAppend(n) with the n <= room.size() bytes it wrote,
  // before any other call; together they are Append of those bytes. Asking
  // again without committing gives the same room. Empty: the writer offers
  // none (the default); use Append. Errors as Append's.
  virtual Result<std::span<char>> AppendSpace(size_t max) {
    (void)max;
    return std::span<char>();
  }
  virtual Status CommitAppend(size_t n) {
    return n == 0 ? OkStatus() : FailedPreconditionError("CommitAppend without room from AppendSpace");
  }
  // Commits the object, verifying its checksum where the service offers it;
  // returns what was written.
  virtual Result<ObjectInfo> Close() = 0;
  virtual void Abort() = 0;
  virtual uint64_t bytes_appended() const = 0;
};

// A per-key outcome of DeleteMany.
struct DeleteFailure {
  std::string key;
  Status status;
};

// An upload that was started and neither completed nor aborted, left by a
// writer that was killed: an S3 multipart upload (its parts cost storage
// until aborted), or a local store's temporary file.
struct IncompleteUpload {
  std::string key;  // the object it would have become
  std::string id;   // S3's upload id; the temporary file's name for a local store
  std::chrono::system_clock::time_point started{};
};

// How an upload may continue one that a killed process started (see
// ObjectStore::OpenResumableUpload). The token is the store's own text,
// opaque to the caller; it names the unfinished upload and is a capability
// (a GCS session URI lets anyone holding it write the object), so whoever
// keeps it keeps it private.
struct ResumeOptions {
  // From an earlier on_token call for the same key and the same bytes; empty
  // starts a new upload.
  std::string token;
  // Called (from any thread, never concurrently) with the token to keep,
  // once the server knows the upload. Unset: none is kept.
  std::function<void(const std::string& token)> on_token;
};

// How a store reaches its service, for `spool whoami` and `spool doctor`:
// never a secret.
struct StoreAccess {
  std::string kind;      // "S3", "GCS", "local files"
  std::string endpoint;  // "http://127.0.0.1:47480"; empty for local files
  std::string settings;  // "region us-east-1, path-style addressing"
  bool anonymous = false;
};

// Who a store's requests act as, and where those credentials came from.
struct StoreIdentity {
  std::string identity;  // "access key CEPH...0001", "an OAuth2 access token", "uid 0 (root)"
  std::string source;    // "environment", "profile dev in ~/.aws/credentials", ...
  std::optional<std::chrono::system_clock::time_point> expires;  // temporary credentials only
};

// What creating a bucket needs beyond the store's own settings.
struct BucketOptions {
  std::string project;  // GCS: the project that owns it; S3 ignores it (the region is the store's)
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // The counters this store's requests are counted into; never null. The
  // local and memory stores make no request that can be retried, so theirs
  // stay at 0.
  RequestCounters& counters() const { return *counters_; }
  const std::shared_ptr<RequestCounters>& shared_counters() const { return counters_; }
  // For factories only (the registry calls it on every store it opens):
  // makes the store count into `counters` instead of its own. Not
  // thread-safe: call before the store is shared.
  void UseCounters(std::shared_ptr<RequestCounters> counters);

  // "s3://bucket/key", "/abs/path", ...: for messages and listings.
  virtual std::string Describe(std::string_view key) const = 0;

  virtual Result<ObjectInfo> Stat(std::string_view key) = 0;
  virtual Result<ListPage> List(const ListOptions& options) = 0;
  virtual Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) = 0;
  // Opens the object a listing just described (key, size, version), which
  // may spare the backend the metadata request OpenRead makes; reads fail
  // with FailedPrecondition if the object changed since (without a version,
  // as from a dataset manifest: if its size changed), and with NotFound if
  // it is gone. The default is OpenRead(listed.key), which fails at once.
  virtual Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed);
  virtual Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key,
                                                            const WriteOptions& options = {}) = 0;
  // Deleting a key that does not exist is OK (as on S3).
  virtual Status Delete(std::string_view key) = 0;
  // Deletes every key; returns the keys that failed (empty: all deleted).
  virtual Result<std::vector<DeleteFailure>> DeleteMany(const std::vector<std::string>& keys);
  // Server-side copy within the store; Unimplemented where the service has none.
  virtual Result<ObjectInfo> Copy(std::string_view from_key, std::string_view to_key);

  // A writer like OpenWrite's whose upload, when the process dies before
  // Close, can be continued by a later one: called with the same key, the
  // token the first one reported, and the same bytes appended from the
  // first, the writer skips what the server already holds (S3: the parts
  // ListParts reports, of the sizes this writer makes; GCS: the session's
  // committed bytes) and sends the rest. A token the server no longer knows
  // (completed, aborted, expired) starts a new upload. The caller must make
  // sure the bytes are the same (a file's size, mtime and CRC32C); the
  // object's CRC32C is still checked at Close. Close, Abort and errors end
  // the upload as OpenWrite's writer does (nothing left behind): only a
  // process that dies leaves one to resume. The default ignores the token
  // and never reports one (local and memory stores: a write that dies
  // leaves a temporary file, nothing to continue).
  virtual Result<std::unique_ptr<WritableObject>> OpenResumableUpload(std::string_view key,
                                                                      const WriteOptions& options,
                                                                      const ResumeOptions& resume);
  // Whether OpenResumableUpload can continue anything (S3, GCS): callers
  // keep no state for a store that cannot.
  virtual bool resumable_uploads() const { return false; }
  // Ends the unfinished upload a token names (S3: aborts it), for a caller
  // that will not continue it; gone already is OK.
  virtual Status DiscardResumableUpload(std::string_view key, const std::string& token);

  // Incomplete uploads whose key starts with `prefix`, in the store's order.
  // The default, for stores that keep no listable upload state, is none
  // (GCS: resumable sessions cannot be listed and expire after a week).
  virtual Result<std::vector<IncompleteUpload>> ListIncompleteUploads(std::string_view prefix);
  // Removes one upload ListIncompleteUploads returned; gone already is OK.
  virtual Status AbortIncompleteUpload(const IncompleteUpload& upload);

  // The endpoint and settings this store uses. The default, for stores
  // that reach no service, leaves every field empty.
  virtual StoreAccess Access() const { return {}; }
  // Obtains the credentials the store signs with (this may fetch a token)
  // and says whose they are. Errors say what is missing and how to provide
  // it. The default, for stores without credentials, is the process's user.
  virtual Result<StoreIdentity> WhoAmI();
  // Creates the bucket the store is bound to. AlreadyExists when it exists;
  // Unimplemented for stores without buckets (the default).
  virtual Status CreateBucket(const BucketOptions& options);

 private:
  std::shared_ptr<RequestCounters> counters_ = std::make_shared<RequestCounters>();
};

// Aborts the incomplete uploads under `prefix` started more than `older_than`
// ago (with `dry_run`, only lists them); returns those uploads. The age keeps
// uploads that another process is still writing.
Result<std::vector<IncompleteUpload>> AbortIncompleteUploads(ObjectStore& store, std::string_view prefix,
                                                             std::chrono::seconds older_than, bool dry_run = false);

// Convenience over the interface, for small objects and whole listings.
Result<std::string> ReadAll(ObjectStore& store, std::string_view key);
// The object a listing just described (OpenListed: no metadata request where
// the store can spare it); FailedPrecondition if it changed since.
Result<std::string> ReadAll(ObjectStore& store, const ObjectInfo& listed);
Result<ObjectInfo> WriteAll(ObjectStore& store, std::string_view key, std::string_view data,
                            const WriteOptions& options = {});
// Every page of a listing, concatenated.
Result<ListPage> ListAll(ObjectStore& store, ListOptions options);

}  // namespace spool
