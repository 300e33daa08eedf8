#include "spool/gcs/gcs_store.h"

#include <charconv>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "spool/core/env.h"
#include "spool/core/http/metered_transport.h"
#include "spool/core/log.h"
#include "spool/core/parallel_for.h"
#include "spool/gcs/continued_writer.h"
#include "spool/gcs/default_credentials.h"
#include "spool/gcs/gcs_reader.h"
#include "spool/gcs/gcs_writer.h"
#include "spool/gcs/request_ops.h"

namespace spool::gcs {

ObjectInfo ToObjectInfo(const ObjectMetadata& object) {
  ObjectInfo info;
  info.key = object.name;
  info.size = object.size;
  info.version = std::to_string(object.generation);
  info.crc32c = object.crc32c;
  if (IsDigestValue(DigestAlgorithm::kMd5, object.md5_base64)) {
    info.digest = StoredDigest{DigestAlgorithm::kMd5, object.md5_base64, "md5Hash"};
  }
  info.updated = object.updated;
  return info;
}

Result<std::shared_ptr<GcsStore>> GcsStore::Open(GcsStoreOptions options) {
  if (options.bucket.empty()) return InvalidArgumentError("a gs:// URL needs a bucket name: gs://BUCKET/KEY");
  bool emulator = false;
  const Env env = CurrentEnv();
  if (options.endpoint.empty()) {
    if (auto host = env.Get("STORAGE_EMULATOR_HOST")) {
      const std::string value = *host;
      options.endpoint = value.find("://") == std::string::npos ? "http://" + value : value;
      emulator = true;
    } else {
      options.endpoint = std::string(kDefaultEndpoint);
    }
  }
  if (!options.transport) options.transport = MakeCurlTransport(options.http);
  options.transport = MeterTransport(std::move(options.transport), options.counters, ClassifyRequest);
  if (!options.credentials) {
    if (options.anonymous || emulator) {
      options.credentials = MakeAnonymousCredentials();
    } else {
      DefaultCredentialsEnvironment lookup;
      lookup.variables = env;
      auto found = FindDefaultCredentials(options.transport, lookup);
      if (!found.ok()) return found.status().WithContext("open gs://" + options.bucket);
      options.credentials = *std::move(found);
    }
  }
  ClientOptions client;
  client.endpoint = options.endpoint;
  client.transport = options.transport;
  client.credentials = options.credentials;
  client.retry = options.retry;
  auto store = std::shared_ptr<GcsStore>(new GcsStore(std::move(options), std::make_shared<GcsClient>(client)));
  log::Write(log::Level::kInfo, "gcs", "gs://" + store->bucket() + ": " + store->DescribeAccess());
  return store;
}

GcsStore::GcsStore(GcsStoreOptions options, std::shared_ptr<GcsClient> client)
    : options_(std::move(options)), client_(std::move(client)) {}

std::string GcsStore::DescribeAccess() const {
  return "endpoint " + options_.endpoint + ", credentials: " + options_.credentials->Describe();
}

std::string GcsStore::Describe(std::string_view key) const { return GcsClient::Url(options_.bucket, key); }

Result<ObjectInfo> GcsStore::Stat(std::string_view key) {
  SPOOL_ASSIGN_OR_RETURN(ObjectMetadata object, client_->GetObject(options_.bucket, key));
  return ToObjectInfo(object);
}

Result<ListPage> GcsStore::List(const ListOptions& options) {
  ListObjectsRequest request;
  request.prefix = options.prefix;
  request.delimiter = options.delimiter;
  request.page_token = options.page_token;
  request.max_results = options.max_keys;
  SPOOL_ASSIGN_OR_RETURN(ObjectListPage page, client_->ListObjects(options_.bucket, request));
  ListPage out;
  out.objects.reserve(page.items.size());
  for (const auto& item : page.items) out.objects.push_back(ToObjectInfo(item));
  out.common_prefixes = std::move(page.prefixes);
  out.next_page_token = std::move(page.next_page_token);
  return out;
}

Result<std::unique_ptr<ReadableObject>> GcsStore::OpenRead(std::string_view key) {
  SPOOL_ASSIGN_OR_RETURN(ObjectMetadata object, client_->GetObject(options_.bucket, key));
  ObjectInfo info = ToObjectInfo(object);
  ReaderOptions reader{options_.reads, options_.executor};
  return std::unique_ptr<ReadableObject>(new GcsReader(client_, std::move(object), std::move(info), reader));
}

Result<std::unique_ptr<ReadableObject>> GcsStore::OpenListed(const ObjectInfo& listed) {
  int64_t generation = 0;
  const std::string& version = listed.version;
  const bool known_generation =
      !version.empty() && std::from_chars(version.data(), version.data() + version.size(), generation).ptr ==
                              version.data() + version.size();
  // An empty object is read with no request at all: without a generation
  // from a listing, nothing would see it gone or changed. A version that is
  // no generation is not this store's. An object of more than one part is
  // read in ranges checked against its CRC32C: a listing gives it, a
  // manifest may.
  if ((PartCount(options_.reads, listed.size) > 1 && !listed.crc32c) ||
      (!known_generation && (listed.size == 0 || !version.empty()))) {
    return OpenRead(listed.key);
  }
  ObjectMetadata object;
  object.bucket = options_.bucket;
  object.name = listed.key;
  object.generation = generation;
  object.size = listed.size;
  object.crc32c = listed.crc32c;
  ReaderOptions reader{options_.reads, options_.executor};
  return std::unique_ptr<ReadableObject>(new GcsReader(client_, std::move(object), listed, reader));
}

namespace {

// How this store's writers upload: the same for a new write and a resumed one.
WriterSettings WriterSettingsOf(const GcsStoreOptions& options) {
  WriterSettings settings;
  settings.resumable_threshold = options.resumable_threshold;
  settings.resumable.chunk_size = options.chunk_size;
  settings.resumable.chunks_in_flight = options.chunks_in_flight;
  settings.resumable.executor = options.executor;
  settings.resumable.budget = options.budget;
  settings.resumable.retry = options.retry;
  return settings;
}

}  // namespace

Result<std::unique_ptr<GcsWriter>> GcsStore::MakeWriter(std::string_view key, const WriteOptions& options,
                                                        bool resumable) {
  const WriterSettings settings = WriterSettingsOf(options_);
  return GcsWriterImpl::Create(client_, options_.bucket, std::string(key), options, settings, resumable);
}

Result<std::unique_ptr<WritableObject>> GcsStore::OpenWrite(std::string_view key, const WriteOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(auto writer, MakeWriter(key, options, /*resumable=*/false));
  return std::unique_ptr<WritableObject>(std::move(writer));
}

Result<std::unique_ptr<GcsWriter>> GcsStore::OpenResumableWrite(std::string_view key, const WriteOptions& options) {
  return MakeWriter(key, options, /*resumable=*/true);
}

Result<std::unique_ptr<GcsWriter>> GcsStore::ResumeWrite(std::string_view key, const ResumableUploadState& state) {
  const WriterSettings settings = WriterSettingsOf(options_);
  return GcsWriterImpl::Create(client_, options_.bucket, std::string(key), WriteOptions{}, settings,
                               /*resumable=*/true, state);
}

Result<std::unique_ptr<WritableObject>> GcsStore::OpenResumableUpload(std::string_view key,
                                                                      const WriteOptions& options,
                                                                      const ResumeOptions& resume) {
  if (options.if_not_exists) return OpenWrite(key, options);
  if (const std::string session = SessionOfGcsResumeToken(resume.token); !session.empty()) {
    Result<UploadStatus> status = client_->QueryUpload(session);
    if (status.ok() && !status->object) {
      return MakeContinuedWriter(*this, std::string(key), session, status->committed);
    }
    // Finalized, expired or unknown (404, 410): a new session.
    if (!status.ok() && IsRetryable(status.status())) {
      return status.status().WithContext("continuing the upload of " + Describe(key));
    }
  }
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<GcsWriter> writer, MakeWriter(key, options, /*resumable=*/true));
  if (resume.on_token) resume.on_token(GcsResumeToken(writer->session_uri()));
  return std::unique_ptr<WritableObject>(std::move(writer));
}

Status GcsStore::DiscardResumableUpload(std::string_view /*key*/, const std::string& token) {
  const std::string session = SessionOfGcsResumeToken(token);
  if (session.empty()) return OkStatus();
  CancelScope cleanup(CancelToken::Process());
  return client_->CancelUpload(session);
}

Status GcsStore::Delete(std::string_view key) {
  // One unconditional attempt first (the common case: one request; the
  // client does not repeat it). If its fate is unknown, reconcile once: look
  // at what is there now and delete exactly that generation, a request the
  // client may repeat because the precondition makes it safe.
  Status first = client_->DeleteObject(options_.bucket, key, Preconditions{});
  if (first.ok() || first.code() == StatusCode::kNotFound) return OkStatus();
  if (!IsRetryable(first)) return first;
  auto current = client_->GetObject(options_.bucket, key);
  if (!current.ok()) return current.status().code() == StatusCode::kNotFound ? OkStatus() : current.status();
  Preconditions unchanged;
  unchanged.if_generation_match = current->generation;
  Status status = client_->DeleteObject(options_.bucket, key, unchanged);
  // 412: the generation we saw was replaced by a write that ran while this
  // delete did; the delete is ordered before that write, which stays.
  if (status.ok() || status.code() == StatusCode::kNotFound || status.remote().http_status == 412) {
    return OkStatus();
  }
  return status;
}

Result<std::vector<DeleteFailure>> GcsStore::DeleteMany(const std::vector<std::string>& keys) {
  std::vector<DeleteFailure> failures;
  std::mutex mu;
  Executor& executor = options_.executor ? *options_.executor : DefaultExecutor();
  // A failed key is reported, not a reason to stop deleting the others.
  SPOOL_RETURN_IF_ERROR(ParallelFor(executor, keys.size(), /*workers=*/16, [&](size_t i) {
    Status status = Delete(keys[i]);
    if (!status.ok()) {
      std::lock_guard lock(mu);
      failures.push_back({keys[i], status});
    }
    return OkStatus();
  }));
  return failures;
}

Result<ObjectInfo> GcsStore::Copy(std::string_view from_key, std::string_view to_key) {
  SPOOL_ASSIGN_OR_RETURN(ObjectMetadata source, client_->GetObject(options_.bucket, from_key));
  std::string token;
  for (;;) {
    SPOOL_ASSIGN_OR_RETURN(RewriteProgress progress,
                           client_->RewriteObject(options_.bucket, from_key, source.generation, options_.bucket,
                                                  to_key, token, Preconditions{}));
    if (progress.done) {
      if (!progress.resource) return InternalError("copy to " + Describe(to_key) + ": done without an object");
      return ToObjectInfo(*progress.resource);
    }
    token = std::move(progress.rewrite_token);
  }
}

}  // namespace spool::gcs
