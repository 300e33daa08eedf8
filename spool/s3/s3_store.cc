#include "spool/s3/s3_store.h"

#include <random>

#include "spool/core/cancel.h"
#include "spool/core/http/metered_transport.h"
#include "spool/s3/credential_providers.h"
#include "spool/s3/errors.h"
#include "spool/s3/request_ops.h"
#include "spool/s3/s3_reader.h"
#include "spool/s3/s3_writer.h"

namespace spool::s3 {
namespace {

// CopyObject copies at most 5 GiB; beyond, UploadPartCopy in parts of this size.
constexpr uint64_t kCopyPartSize = 1ull << 30;

std::string RandomHex() {
  std::random_device device;
  std::uniform_int_distribution<uint64_t> dist;
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(dist(device)));
  return buffer;
}

}  // namespace

Result<std::shared_ptr<S3Store>> S3Store::Open(const std::string& bucket, const S3Options& options, const Env& env) {
  SPOOL_ASSIGN_OR_RETURN(ResolvedConfig config, ResolveConfig(options, bucket, env));
  HttpOptions http;
  http.ca_bundle = config.ca_bundle;
  // Every exchange is counted into the store's counters (the registry's, or
  // the caller's through StoreOptions::counters).
  const std::shared_ptr<RequestCounters>& counters = options.counters;
  auto transport = MeterTransport(MakeCurlTransport(http), counters, ClassifyRequest);
  // Credential sources (STS, container, instance metadata) answer quickly or not at all.
  HttpOptions credential_http = http;
  credential_http.connect_timeout = std::chrono::seconds(2);
  credential_http.total_timeout = std::chrono::seconds(10);
  std::shared_ptr<CredentialsProvider> credentials;
  if (config.anonymous) {
    credentials = std::make_shared<StaticCredentialsProvider>(Credentials{}, "anonymous (--no-sign-request)");
  } else {
    ChainOptions chain{"", "", "", options.profile, config.region};
    credentials = MakeDefaultChain(chain, env,
                                   MeterTransport(MakeCurlTransport(credential_http), counters,
                                                  [](const HttpRequest&) { return RequestOp::kTokenFetch; }));
  }
  auto client = std::make_shared<S3Client>(std::move(config), bucket, std::move(transport), std::move(credentials));
  return std::make_shared<S3Store>(std::move(client), options.executor, options.budget);
}

S3Store::S3Store(std::shared_ptr<S3Client> client, Executor* executor, ByteBudget* budget)
    : client_(std::move(client)),
      executor_(executor ? *executor : DefaultExecutor()),
      budget_(budget ? *budget : DefaultByteBudget()) {}

std::string S3Store::Describe(std::string_view key) const { return client_->Describe(key); }

Result<ObjectInfo> S3Store::Stat(std::string_view key) { return client_->HeadObject(key); }

Result<ListPage> S3Store::List(const ListOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(ListObjectsResult result, client_->ListObjectsV2(options));
  ListPage page;
  page.objects = std::move(result.objects);
  page.common_prefixes = std::move(result.common_prefixes);
  if (result.is_truncated) page.next_page_token = std::move(result.next_continuation_token);
  return page;
}

Result<std::unique_ptr<ReadableObject>> S3Store::OpenRead(std::string_view key) {
  SPOOL_ASSIGN_OR_RETURN(ObjectInfo info, client_->HeadObject(key));
  return MakeS3Reader(client_, std::move(info), executor_);
}

Result<std::unique_ptr<ReadableObject>> S3Store::OpenListed(const ObjectInfo& listed) {
  // An empty object is read with no request at all: without an ETag from a
  // listing, nothing would see it missing or changed, so a HEAD opens it.
  // A larger one needs the HEAD's CRC32C unless the caller knows it.
  if ((listed.size > client_->read_part_size() && !listed.crc32c) || (listed.size == 0 && listed.version.empty())) {
    return OpenRead(listed.key);
  }
  return MakeS3Reader(client_, listed, executor_);
}

Result<std::unique_ptr<WritableObject>> S3Store::OpenWrite(std::string_view key, const WriteOptions& options) {
  ConditionalCreateSupport support;
  if (options.if_not_exists) {
    SPOOL_ASSIGN_OR_RETURN(support, ProbeConditionalCreate());
    if (!support.put) {
      return UnimplementedError("create-only write of " + Describe(key) + ": the S3 server at " +
                                client_->config().endpoint.ToString() +
                                " ignores If-None-Match: * (Ceph RGW 16 does), so spool cannot guarantee that an "
                                "existing object is not overwritten; write without create-only or use a server "
                                "with conditional writes (AWS S3, MinIO, Ceph RGW 18+)");
    }
  }
  return MakeS3Writer(client_, std::string(key), options, support, executor_, budget_);
}

Result<std::unique_ptr<WritableObject>> S3Store::OpenResumableUpload(std::string_view key,
                                                                     const WriteOptions& options,
                                                                     const ResumeOptions& resume) {
  if (options.if_not_exists) return OpenWrite(key, options);
  S3ResumePlan plan;
  plan.on_token = resume.on_token;
  uint64_t part_size = 0;
  std::string upload_id;
  if (!resume.token.empty() && ParseS3ResumeToken(resume.token, &part_size, &upload_id)) {
    if (part_size != PartSizeFor(0, client_->config().part_size, options.expected_size)) {
      // Parts of another size cannot be reused: end that upload, start anew.
      CancelScope cleanup(CancelToken::Process());
      client_->AbortMultipartUpload(key, upload_id).IgnoreError();
    } else {
      Result<std::vector<UploadedPart>> held = client_->ListParts(key, upload_id);
      if (held.ok()) {
        plan.upload_id = upload_id;
        for (UploadedPart& part : *held) plan.parts[part.part_number] = std::move(part);
      } else if (held.status().code() != StatusCode::kNotFound) {
        return held.status().WithContext("continuing the upload of " + Describe(key));
      }  // NotFound: completed, aborted or expired; a new upload it is
    }
  }
  return MakeS3Writer(client_, std::string(key), options, ConditionalCreateSupport{}, executor_, budget_,
                      std::move(plan));
}

Status S3Store::DiscardResumableUpload(std::string_view key, const std::string& token) {
  uint64_t part_size = 0;
  std::string upload_id;
  if (!ParseS3ResumeToken(token, &part_size, &upload_id)) return OkStatus();  // not ours: nothing to end
  CancelScope cleanup(CancelToken::Process());
  return client_->AbortMultipartUpload(key, upload_id);
}

Status S3Store::Delete(std::string_view key) { return client_->DeleteObject(key); }

Result<std::vector<DeleteFailure>> S3Store::DeleteMany(const std::vector<std::string>& keys) {
  std::vector<DeleteFailure> failures;
  for (size_t begin = 0; begin < keys.size(); begin += 1000) {
    std::vector<std::string> batch(keys.begin() + begin, keys.begin() + std::min(keys.size(), begin + 1000));
    SPOOL_ASSIGN_OR_RETURN(auto errors, client_->DeleteObjects(batch));
    for (const DeleteObjectsError& error : errors) {
      Status status(CodeForS3Error(error.code, 0),
                    "DELETE " + Describe(error.key) + ": " + error.code + (error.message.empty() ? "" : ": " + error.message));
      failures.push_back({error.key, status.WithRemote(RemoteError{0, error.code, ""})});
    }
  }
  return failures;
}

Result<ObjectInfo> S3Store::Copy(std::string_view from_key, std::string_view to_key) {
  SPOOL_ASSIGN_OR_RETURN(ObjectInfo source, client_->HeadObject(from_key));
  if (source.size <= kMaxPartSize) {
    SPOOL_RETURN_IF_ERROR(client_->CopyObject(from_key, to_key).status());
  } else {
    SPOOL_ASSIGN_OR_RETURN(std::string upload_id, client_->CreateMultipartUpload(
                                                  // The copy keeps the source's CRC32C, as CopyObject keeps its metadata.
                                                  to_key, PutOptions{false, "", source.crc32c}));
    std::vector<CompletedPart> parts;
    Status status;
    for (uint64_t begin = 0; begin < source.size && status.ok(); begin += kCopyPartSize) {
      const uint64_t last = std::min(source.size, begin + kCopyPartSize) - 1;
      const int number = static_cast<int>(parts.size()) + 1;
      auto part = client_->UploadPartCopy(from_key, to_key, upload_id, number, begin, last);
      if (part.ok()) {
        parts.push_back({number, part->etag});
      } else {
        status = part.status();
      }
    }
    if (status.ok()) status = client_->CompleteMultipartUpload(to_key, upload_id, parts, false).status();
    if (!status.ok()) {
      client_->AbortMultipartUpload(to_key, upload_id).IgnoreError();
      return status;
    }
  }
  return client_->HeadObject(to_key);
}

Result<std::vector<IncompleteUpload>> S3Store::ListIncompleteUploads(std::string_view prefix) {
  std::vector<IncompleteUpload> uploads;
  std::string key_marker, upload_id_marker;
  while (true) {
    SPOOL_ASSIGN_OR_RETURN(auto page, client_->ListMultipartUploads(prefix, key_marker, upload_id_marker));
    for (MultipartUploadInfo& upload : page.uploads) {
      uploads.push_back({std::move(upload.key), std::move(upload.upload_id), upload.initiated});
    }
    if (!page.is_truncated) return uploads;
    key_marker = page.next_key_marker;
    upload_id_marker = page.next_upload_id_marker;
  }
}

Status S3Store::AbortIncompleteUpload(const IncompleteUpload& upload) {
  return client_->AbortMultipartUpload(upload.key, upload.id);  // NoSuchUpload counts as done
}

Result<ConditionalCreateSupport> S3Store::ProbeConditionalCreate() {
  std::lock_guard lock(probe_mu_);
  if (conditional_create_) return *conditional_create_;
  // A handful of small requests that create and remove objects of their
  // own: cut short by a cancel, they would leave a probe object or an
  // upload behind. Only the end of the exit grace stops them.
  CancelScope probe_scope(CancelToken::Process());
  // Create a probe object create-only, then try to replace it create-only by
  // a PUT and by a one-part multipart upload: a server that honours
  // If-None-Match refuses both with 412.
  const std::string probe = ".spool-probe/if-none-match-" + RandomHex();
  const PutOptions create_only{true, "", std::nullopt};
  auto refused = [](const Status& status) {
    return status.remote().http_status == 412 || status.remote().http_status == 409;
  };
  ConditionalCreateSupport support;
  Status status = client_->PutObject(probe, "probe", create_only).status();
  if (status.ok()) {
    auto second = client_->PutObject(probe, "probe", create_only);
    support.put = !second.ok() && refused(second.status());
    if (!second.ok() && !support.put) status = second.status();
  }
  if (status.ok() && support.put) {
    auto upload_id = client_->CreateMultipartUpload(probe, create_only);
    status = upload_id.status();
    if (status.ok()) {
      auto etag = client_->UploadPart(probe, *upload_id, 1, "probe");
      status = etag.status();
      if (status.ok()) {
        auto completed = client_->CompleteMultipartUpload(probe, *upload_id, {{1, *etag}}, true);
        support.complete = !completed.ok() && refused(completed.status());
        if (!completed.ok() && !support.complete) status = completed.status();
      }
      client_->AbortMultipartUpload(probe, *upload_id).IgnoreError();
    }
  }
  client_->DeleteObject(probe).IgnoreError();
  SPOOL_RETURN_IF_ERROR(status.WithContext("probing conditional writes at " + client_->config().endpoint.ToString()));
  conditional_create_ = support;
  return support;
}

}  // namespace spool::s3
