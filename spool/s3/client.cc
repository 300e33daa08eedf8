#include "spool/s3/client.h"

#include <chrono>
#include <ctime>

#include "spool/core/crc32c.h"
#include "spool/core/digest.h"
#include "spool/core/log.h"
#include "spool/core/storage/ranged_reads.h"
#include "spool/core/strings.h"
#include "spool/s3/crypto.h"
#include "spool/s3/errors.h"

namespace spool::s3 {

struct S3Client::Request {
  std::string operation;   // for messages: "GET", "PUT part 3", ...
  std::string method;
  std::string key;         // empty: the bucket itself
  KeyValues query;
  KeyValues headers;       // signed along with Host and x-amz-*
  std::string_view body;
  Idempotency idempotency = Idempotency::kIdempotent;
};

namespace {
// An answer that does not parse names the request and the object, like
// every other error: "DeleteObjects s3://bucket: the server sent a malformed ...".
template <typename T>
Result<T> NameParseError(Result<T> parsed, const std::string& operation, const std::string& resource) {
  if (parsed.ok()) return parsed;
  return parsed.status().WithContext(operation + " " + resource);
}
}  // namespace

namespace {

constexpr std::string_view kDefaultContentType = "binary/octet-stream";

// A multipart object's checksum may be of its parts' checksums (AWS's
// COMPOSITE type, a value "xxxx-12"), not of its bytes: it cannot be checked
// against the bytes without the part boundaries, so it is not used. S3 makes
// a multipart object's checksum COMPOSITE unless the upload asked for
// FULL_OBJECT, so an answer for a multipart object (its ETag ends "-N") that
// does not say FULL_OBJECT counts as composite: moto's HeadObject, for one,
// sends a composite value with neither its "-N" nor the type.
bool CompositeChecksums(const HttpHeaders& headers) {
  const std::string type = headers.Get("x-amz-checksum-type").value_or("");
  if (EqualsIgnoreCase(type, "COMPOSITE")) return true;
  const bool multipart = headers.Get("ETag").value_or("").find('-') != std::string::npos;
  return multipart && !EqualsIgnoreCase(type, "FULL_OBJECT");
}

std::optional<uint32_t> FullObjectCrc32c(const HttpHeaders& headers) {
  auto value = headers.Get("x-amz-checksum-crc32c");
  if (!value || value->find('-') != std::string::npos || CompositeChecksums(headers)) return std::nullopt;
  uint32_t crc = 0;
  if (!crc32c::FromBase64(*value, &crc)) return std::nullopt;
  return crc;
}

// The CRC32C an answer carries for the whole object: the server's own, else
// the one spool's uploader stored in user metadata.
void SetStoredCrc32c(const HttpHeaders& headers, std::optional<uint32_t>& crc, bool& from_uploader) {
  crc = FullObjectCrc32c(headers);
  from_uploader = false;
  if (crc) return;
  uint32_t stored = 0;
  auto value = headers.Get(std::string(kUploaderCrc32cHeader));
  if (value && crc32c::FromBase64(*value, &stored)) {
    crc = stored;
    from_uploader = true;
  }
}

// Whether the ETag of a single-part object is the MD5 of its bytes: not
// when it is encrypted with SSE-KMS, DSSE or a customer key (SSE-C), whose
// ETags are not; SSE-S3 (AES256) keeps the MD5. An encryption this code
// does not know counts as not.
bool EtagCanBeMd5(const HttpHeaders& headers) {
  if (headers.Has("x-amz-server-side-encryption-customer-algorithm")) return false;
  const std::optional<std::string> sse = headers.Get("x-amz-server-side-encryption");
  return !sse || EqualsIgnoreCase(*sse, "AES256");
}

// The MD5 (raw) that a single-part object's ETag is: exactly 32 hex digits
// between the quotes ("-N" marks a multipart object, whose ETag is an MD5 of
// its parts' MD5s).
std::optional<std::string> Md5OfEtag(std::string_view etag) {
  if (etag.size() == 34 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, 32);
  if (etag.size() != 32) return std::nullopt;
  std::string raw(16, '\0');
  for (size_t i = 0; i < 32; ++i) {
    const char c = AsciiToLower(etag[i]);
    int v = 0;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    raw[i / 2] = static_cast<char>((static_cast<unsigned char>(raw[i / 2]) << 4) | v);
  }
  return raw;
}

// The checksum of the whole object that a HEAD or GET answer (asked with
// x-amz-checksum-mode: ENABLED) carries besides CRC32C: a full-object
// x-amz-checksum-* of another algorithm (the cheapest to compute first),
// else the MD5 a single-part object's ETag is, where the answer shows that
// it can be one. Never from a listing: it does not show the encryption.
std::optional<StoredDigest> StoredDigestOf(const HttpHeaders& headers) {
  if (!CompositeChecksums(headers)) {
    static constexpr std::pair<const char*, DigestAlgorithm> kChecksums[] = {
        {"x-amz-checksum-crc32", DigestAlgorithm::kCrc32},
        {"x-amz-checksum-crc64nvme", DigestAlgorithm::kCrc64Nvme},
        {"x-amz-checksum-sha256", DigestAlgorithm::kSha256},
        {"x-amz-checksum-sha1", DigestAlgorithm::kSha1},
    };
    for (const auto& [header, algorithm] : kChecksums) {
      std::optional<std::string> value = headers.Get(header);
      // IsDigestValue also turns away a composite "xxxx-12".
      if (value && IsDigestValue(algorithm, *value)) return StoredDigest{algorithm, *value, header};
    }
  }
  if (!EtagCanBeMd5(headers)) return std::nullopt;
  std::optional<std::string> md5 = Md5OfEtag(headers.Get("ETag").value_or(""));
  if (!md5) return std::nullopt;
  return StoredDigest{DigestAlgorithm::kMd5, spool::Base64Encode(*md5), "ETag"};
}

std::chrono::system_clock::time_point ParseHttpDate(const std::string& text) {
  std::tm tm{};
  if (strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S", &tm) == nullptr) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

// A signed payload is checked by the server against its SHA-256
// (XAmzContentSHA256Mismatch), so Content-MD5 would only hash every byte a
// second time; an unsigned payload (over https) carries it instead.
void AddContentMd5(std::string_view body, bool payload_signed, KeyValues& headers) {
  if (!payload_signed) headers.emplace_back("content-md5", Base64Encode(Md5(body)));
}

// The CRC32C goes twice: as a flexible checksum the server checks and keeps
// where it supports them (AWS), and as user metadata every S3 server keeps.
// A single PUT's checksums: Content-MD5 (unless the payload is signed), and
// the CRC32C twice: as the flexible checksum, for servers that check it and
// keep it (S3 checks it against the body; x-amz-sdk-checksum-algorithm is what
// the AWS SDKs send with it, and what moto needs to keep it), and in user
// metadata, which every server keeps (Ceph RGW 16 ignores flexible checksums).
void AddChecksums(std::string_view body, bool payload_signed, KeyValues& headers) {
  AddContentMd5(body, payload_signed, headers);
  const std::string crc = crc32c::ToBase64(crc32c::Value(body));
  headers.emplace_back("x-amz-sdk-checksum-algorithm", "CRC32C");
  headers.emplace_back("x-amz-checksum-crc32c", crc);
  headers.emplace_back(std::string(kUploaderCrc32cHeader), crc);
}

// A BufferSink that keeps the ETag of a 2xx answer, which a transfer that
// breaks mid-body had too: the attempt that resumes it is pinned to it.
class EtagKeepingSink : public BufferSink {
 public:
  using BufferSink::BufferSink;
  Status OnHeaders(int status, const HttpHeaders& headers) override {
    if (status >= 200 && status < 300) etag_ = headers.Get("ETag").value_or("");
    return OkStatus();
  }
  const std::string& etag() const { return etag_; }

 private:
  std::string etag_;
};

}  // namespace

S3Client::S3Client(ResolvedConfig config, std::string bucket, std::shared_ptr<HttpTransport> transport,
                   std::shared_ptr<CredentialsProvider> credentials)
    : config_(std::move(config)),
      bucket_(std::move(bucket)),
      transport_(std::move(transport)),
      credentials_(std::move(credentials)),
      location_{config_.region, config_.endpoint},
      throttle_(RetryThrottle::ForStore("s3://" + bucket_, config_.endpoint.ToString())) {}

S3Client::Location S3Client::CurrentLocation() const {
  std::lock_guard lock(location_mu_);
  return location_;
}

std::string S3Client::region() const { return CurrentLocation().region; }

bool S3Client::FollowRegion(const HttpResponse& response, const Location& used) {
  if (config_.custom_endpoint || (response.status != 301 && response.status != 400)) return false;
  const std::string region = response.headers.Get("x-amz-bucket-region").value_or("");
  if (region.empty() || region == used.region) return false;
  std::lock_guard lock(location_mu_);
  location_.region = region;
  location_.endpoint.host = "s3." + region + ".amazonaws.com";
  log::Write(log::Level::kInfo, "s3", "s3://" + bucket_ + " is in " + region + ", not " + used.region +
                                          "; using " + location_.endpoint.ToString());
  return true;
}

std::string S3Client::Describe(std::string_view key) const { return "s3://" + bucket_ + "/" + std::string(key); }

void S3Client::Address(const Endpoint& endpoint, std::string_view key, std::string* host, std::string* path) const {
  const std::string encoded_key = UriEncode(key, false);
  if (config_.path_style) {
    *host = endpoint.HostHeader();
    path->assign("/").append(UriEncode(bucket_, true));
    if (!key.empty()) path->append("/").append(encoded_key);
  } else {
    Endpoint virtual_host = endpoint;
    virtual_host.host = bucket_ + "." + virtual_host.host;
    *host = virtual_host.HostHeader();
    path->assign("/").append(encoded_key);
  }
}

ErrorContext S3Client::Context(const Request& request, const Endpoint& endpoint,
                              const std::string& access_key_id) const {
  return ErrorContext{request.operation, request.key.empty() ? "s3://" + bucket_ : Describe(request.key),
                      endpoint.ToString(), access_key_id};
}

Result<HttpResponse> S3Client::SendOnce(const Request& request, ResponseSink* sink) {
  Credentials credentials;
  if (!config_.anonymous) {
    // One fetch per attempt at most (cached after the first success): a
    // transient failure is retried by Send's loop with the request itself,
    // whose "gave up after N attempts" names the request already.
    auto got = credentials_->Get();
    if (!got.ok()) {
      if (IsRetryable(got.status())) return got.status();
      return got.status().WithContext(request.operation + " " + Describe(request.key));
    }
    credentials = std::move(got).value();
  }

  const Location location = CurrentLocation();
  std::string host, path;
  Address(location.endpoint, request.key, &host, &path);
  SignableRequest signable{request.method, path, request.query, request.headers, ""};
  signable.headers.emplace_back("host", host);
  if (request.body.empty()) {
    signable.payload_hash = std::string(kEmptyPayloadHash);
  } else {
    signable.payload_hash = config_.sign_payload ? Sha256Hex(request.body) : std::string(kUnsignedPayload);
  }
  signable.headers.emplace_back("x-amz-content-sha256", signable.payload_hash);

  HttpRequest http;
  http.method = request.method;
  std::string url = location.endpoint.scheme + "://" + host + path;
  std::string query = CanonicalQueryString(request.query);
  if (!query.empty()) url += "?" + query;
  http.url = std::move(url);
  http.body = request.body;
  if (!credentials.anonymous()) {
    std::string authorization =
        SignHeaders(signable, credentials, SigningScope{location.region, "s3"}, std::chrono::system_clock::now());
    http.headers.Add("Authorization", std::move(authorization));
  }
  for (const auto& [name, value] : signable.headers) {
    if (name != "host") http.headers.Add(name, value);
  }

  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, transport_->Send(http, sink));
  if (!response.ok()) {
    // Once: after the switch the region matches what the server said.
    if (FollowRegion(response, location)) return SendOnce(request, sink);
    NoteRetryAfter(ParseRetryAfter(response.headers.Get("Retry-After").value_or("")));
    return ErrorFromResponse(response, Context(request, location.endpoint, credentials.access_key_id));
  }
  return response;
}

Result<HttpResponse> S3Client::Send(const Request& request, std::string* body) {
  const std::string what = request.operation + " " + (request.key.empty() ? "s3://" + bucket_ : Describe(request.key));
  return RetryThrottled(
      config_.retry.policy, request.idempotency, what,
      [&]() -> Result<HttpResponse> {
        if (body) body->clear();
        StringSink sink(body);
        return SendOnce(request, body ? &sink : nullptr);
      },
      config_.retry.environment, throttle_.get());
}

Result<ObjectInfo> S3Client::HeadObject(std::string_view key) {
  Request request{"HEAD", "HEAD", std::string(key), {}, {{"x-amz-checksum-mode", "ENABLED"}}, {}};
  auto sent = Send(request, nullptr);
  if (!sent.ok()) return ExplainHeadRefusal(key, sent.status());
  HttpResponse& response = *sent;
  ObjectInfo info;
  info.key = std::string(key);
  info.size = std::strtoull(response.headers.Get("Content-Length").value_or("0").c_str(), nullptr, 10);
  info.version = response.headers.Get("ETag").value_or("");
  SetStoredCrc32c(response.headers, info.crc32c, info.crc32c_from_uploader);
  info.digest = StoredDigestOf(response.headers);
  info.updated = ParseHttpDate(response.headers.Get("Last-Modified").value_or(""));
  return info;
}

// A HEAD answer has no body, so a 400 or 403 does not say why: an expired
// session token (400 ExpiredToken), an unknown key or a wrong secret (403),
// or a denied permission (403 AccessDenied) look alike, and a 400 would read
// as a bad argument. One ranged GET of the same object, signed the same way,
// brings the error document that names it; only on this error path.
Status S3Client::ExplainHeadRefusal(std::string_view key, const Status& head) {
  const int http_status = head.remote().http_status;
  if (http_status != 400 && http_status != 403) return head;
  Request probe{"HEAD", "GET", std::string(key), {}, {{"range", "bytes=0-0"}}, {}};
  std::string body;
  auto answer = Send(probe, &body);
  if (answer.ok() || answer.status().remote().http_status != http_status ||
      answer.status().remote().service_code.empty() || answer.status().remote().service_code.starts_with("HTTP ")) {
    return head;
  }
  return answer.status();
}

Result<GetResult> S3Client::GetObject(std::string_view key, const GetOptions& options, std::span<char> buffer) {
  GetResult result;
  if (buffer.empty()) return result;
  const uint64_t last_byte = options.offset + buffer.size() - 1;
  bool at_end = false;  // the object ended before the buffer was full
  const std::string what = "GET " + Describe(key) + " at byte " + std::to_string(options.offset);
  // What pins the attempts: the caller's ETag, else the first answer's.
  std::string if_match = options.if_match;
  Status status = RetryThrottled(
      config_.retry.policy, Idempotency::kIdempotent, what,
      [&]() -> Status {
        if (result.bytes == buffer.size() || at_end) return OkStatus();
        Request request{"GET", "GET", std::string(key), {}, {}, {}};
        const bool plain_get =
            options.whole_object && !options.if_match.empty() && options.offset == 0 && result.bytes == 0;
        if (!plain_get) {
          request.headers.emplace_back(
              "range", "bytes=" + std::to_string(options.offset + result.bytes) + "-" + std::to_string(last_byte));
        }
        if (!if_match.empty()) request.headers.emplace_back("if-match", if_match);
        if (options.want_checksum) request.headers.emplace_back("x-amz-checksum-mode", "ENABLED");
        EtagKeepingSink sink(buffer.subspan(result.bytes));
        auto response = SendOnce(request, &sink);
        result.bytes += sink.size();  // resume from here if the transfer broke
        if (if_match.empty()) if_match = sink.etag();
        if (!response.ok()) {
          if (response.status().remote().http_status == 412 && !if_match.empty()) {
            return FailedPreconditionError(Describe(key) + " changed while it was being read (it was " + if_match +
                                           " when opened); open it again")
                .WithRemote(response.status().remote());
          }
          if (response.status().remote().http_status == 416 && options.object_size) {
            return ShorterThanOpenedError(Describe(key), *options.object_size).WithRemote(response.status().remote());
          }
          return response.status();
        }
        if (response->status == 200 && options.offset + result.bytes - sink.size() != 0) {
          return InternalError(Describe(key) + ": the server ignored the Range header");
        }
        std::optional<uint64_t> total = ContentRangeTotal(response->headers);
        if (response->status == 200) {  // the whole object: its length is its size
          if (auto length = response->headers.Get("Content-Length"))
            total = std::strtoull(length->c_str(), nullptr, 10);
        }
        result.etag = if_match;
        if (options.object_size && total && *total != *options.object_size) {
          return SizeChangedError(Describe(key), *total, *options.object_size);
        }
        if (result.bytes < buffer.size()) {
          // A short 206 means the object ends here; a short body with a longer
          // Content-Range means the transfer broke: try again from here.
          if (!total || options.offset + result.bytes >= *total) {
            at_end = true;
          } else {
            return UnavailableError("the body of " + what + " ended early");
          }
        }
        if (options.offset == 0 && result.bytes == response->bytes_received) {
          SetStoredCrc32c(response->headers, result.crc32c, result.crc32c_from_uploader);
          result.digest = StoredDigestOf(response->headers);
        }
        return OkStatus();
      },
      config_.retry.environment, throttle_.get());
  if (!status.ok()) return status;
  return result;
}

Result<std::string> S3Client::PutObject(std::string_view key, std::string_view body, const PutOptions& options) {
  Request request{"PUT", "PUT", std::string(key), {}, {}, body};
  request.headers.emplace_back("content-type", options.content_type.empty() ? std::string(kDefaultContentType)
                                                                            : options.content_type);
  AddChecksums(body, config_.sign_payload, request.headers);
  if (options.if_none_match) request.headers.emplace_back("if-none-match", "*");
  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, nullptr));
  return response.headers.Get("ETag").value_or("");
}

Result<std::string> S3Client::CreateMultipartUpload(std::string_view key, const PutOptions& options) {
  Request request{"CreateMultipartUpload", "POST", std::string(key), {{"uploads", ""}}, {}, {}};
  request.headers.emplace_back("content-type", options.content_type.empty() ? std::string(kDefaultContentType)
                                                                            : options.content_type);
  if (options.crc32c) request.headers.emplace_back(std::string(kUploaderCrc32cHeader), crc32c::ToBase64(*options.crc32c));
  // Retrying a create at worst leaves an unused upload behind, which the
  // cleanup call (AbortIncompleteUploads) removes.
  std::string body;
  SPOOL_RETURN_IF_ERROR(Send(request, &body).status());
  return NameParseError(ParseInitiateMultipartUpload(body), request.operation, Describe(key));
}

Result<std::string> S3Client::UploadPart(std::string_view key, const std::string& upload_id, int part_number,
                                         std::string_view body) {
  Request request{"PUT part " + std::to_string(part_number), "PUT", std::string(key),
                  {{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id}}, {}, body};
  AddContentMd5(body, config_.sign_payload, request.headers);
  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, nullptr));
  auto etag = response.headers.Get("ETag");
  if (!etag) return InternalError("PUT part " + std::to_string(part_number) + " of " + Describe(key) + ": no ETag in the answer");
  return *etag;
}

Result<CopyResult> S3Client::UploadPartCopy(std::string_view from_key, std::string_view key,
                                            const std::string& upload_id, int part_number, uint64_t first_byte,
                                            uint64_t last_byte) {
  Request request{"UploadPartCopy " + std::to_string(part_number), "PUT", std::string(key),
                  {{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id}}, {}, {}};
  request.headers.emplace_back("x-amz-copy-source", "/" + bucket_ + "/" + UriEncode(from_key, false));
  request.headers.emplace_back("x-amz-copy-source-range",
                               "bytes=" + std::to_string(first_byte) + "-" + std::to_string(last_byte));
  std::string body;
  SPOOL_RETURN_IF_ERROR(Send(request, &body).status());
  return NameParseError(ParseCopyResult(body), request.operation, Describe(key));
}

Result<std::string> S3Client::CompleteMultipartUpload(std::string_view key, const std::string& upload_id,
                                                      const std::vector<CompletedPart>& parts, bool if_none_match) {
  const std::string xml = BuildCompleteMultipartUpload(parts);
  Request request{"CompleteMultipartUpload", "POST", std::string(key), {{"uploadId", upload_id}}, {}, xml};
  request.headers.emplace_back("content-type", "application/xml");
  if (if_none_match) request.headers.emplace_back("if-none-match", "*");
  // Safe to retry: completing the same upload twice yields the same object,
  // and a retry after success answers NoSuchUpload, which the caller checks.
  request.idempotency = Idempotency::kIdempotent;
  std::string body;
  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, &body));
  // S3 may answer 200 and then report the failure in the body.
  if (auto error = ParseErrorDocument(body)) {
    return ErrorFromResponse(HttpResponse{error->code == "InternalError" ? 500 : 400, response.headers, "", 0, 0},
                             body, ErrorContext{"CompleteMultipartUpload", Describe(key), CurrentLocation().endpoint.ToString(), ""});
  }
  SPOOL_ASSIGN_OR_RETURN(CompleteMultipartResult result,
                         NameParseError(ParseCompleteMultipartUpload(body), request.operation, Describe(key)));
  return result.etag;
}

Status S3Client::AbortMultipartUpload(std::string_view key, const std::string& upload_id) {
  Request request{"AbortMultipartUpload", "DELETE", std::string(key), {{"uploadId", upload_id}}, {}, {}};
  auto response = Send(request, nullptr);
  if (!response.ok() && response.status().code() == StatusCode::kNotFound) return OkStatus();  // gone already
  return response.status();
}

Result<ListMultipartUploadsResult> S3Client::ListMultipartUploads(std::string_view prefix, std::string_view key_marker,
                                                                  std::string_view upload_id_marker) {
  Request request{"ListMultipartUploads", "GET", "", {{"uploads", ""}}, {}, {}};
  if (!prefix.empty()) request.query.emplace_back("prefix", std::string(prefix));
  if (!key_marker.empty()) request.query.emplace_back("key-marker", std::string(key_marker));
  if (!upload_id_marker.empty()) request.query.emplace_back("upload-id-marker", std::string(upload_id_marker));
  std::string body;
  SPOOL_RETURN_IF_ERROR(Send(request, &body).status());
  return NameParseError(ParseListMultipartUploads(body), request.operation, Describe(""));
}

Result<std::vector<UploadedPart>> S3Client::ListParts(std::string_view key, const std::string& upload_id) {
  std::vector<UploadedPart> parts;
  int marker = 0;
  while (true) {
    Request request{"ListParts", "GET", std::string(key), {{"uploadId", upload_id}}, {}, {}};
    if (marker > 0) request.query.emplace_back("part-number-marker", std::to_string(marker));
    std::string body;
    SPOOL_RETURN_IF_ERROR(Send(request, &body).status());
    SPOOL_ASSIGN_OR_RETURN(ListPartsResult page, NameParseError(ParseListParts(body), request.operation, Describe(key)));
    parts.insert(parts.end(), page.parts.begin(), page.parts.end());
    if (!page.is_truncated || page.next_part_number_marker <= marker) return parts;
    marker = page.next_part_number_marker;
  }
}

Result<ListObjectsResult> S3Client::ListObjectsV2(const ListOptions& options) {
  Request request{"ListObjectsV2", "GET", "", {{"list-type", "2"}}, {}, {}};
  if (!options.prefix.empty()) request.query.emplace_back("prefix", options.prefix);
  if (!options.delimiter.empty()) request.query.emplace_back("delimiter", options.delimiter);
  if (!options.page_token.empty()) request.query.emplace_back("continuation-token", options.page_token);
  if (options.max_keys > 0) request.query.emplace_back("max-keys", std::to_string(options.max_keys));
  std::string body;
  SPOOL_RETURN_IF_ERROR(Send(request, &body).status());
  return NameParseError(ParseListObjectsV2(body), request.operation, Describe(options.prefix));
}

Status S3Client::DeleteObject(std::string_view key) {
  Request request{"DELETE", "DELETE", std::string(key), {}, {}, {}};
  return Send(request, nullptr).status();
}

Status S3Client::CreateBucket() {
  std::string xml;
  const std::string region = CurrentLocation().region;
  if (!region.empty() && region != "us-east-1") {
    xml = "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>" +
          region + "</LocationConstraint></CreateBucketConfiguration>";
  }
  Request request{"CreateBucket", "PUT", "", {}, {}, xml};
  if (!xml.empty()) request.headers.emplace_back("content-type", "application/xml");
  return Send(request, nullptr).status();
}

Result<std::vector<DeleteObjectsError>> S3Client::DeleteObjects(const std::vector<std::string>& keys) {
  if (keys.size() > 1000) return InvalidArgumentError("DeleteObjects takes at most 1,000 keys per call");
  const std::string xml = BuildDeleteObjects(keys);
  Request request{"DeleteObjects", "POST", "", {{"delete", ""}}, {}, xml};
  request.headers.emplace_back("content-type", "application/xml");
  request.headers.emplace_back("content-md5", Base64Encode(Md5(xml)));
  std::string body;
  SPOOL_RETURN_IF_ERROR(Send(request, &body).status());
  return NameParseError(ParseDeleteObjectsResult(body), request.operation, Describe(""));
}

Result<CopyResult> S3Client::CopyObject(std::string_view from_key, std::string_view to_key) {
  Request request{"CopyObject", "PUT", std::string(to_key), {}, {}, {}};
  request.headers.emplace_back("x-amz-copy-source", "/" + bucket_ + "/" + UriEncode(from_key, false));
  std::string body;
  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, &body));
  if (auto error = ParseErrorDocument(body)) {
    return ErrorFromResponse(HttpResponse{500, response.headers, "", 0, 0}, body,
                             ErrorContext{"CopyObject", Describe(to_key), CurrentLocation().endpoint.ToString(), ""});
  }
  return NameParseError(ParseCopyResult(body), request.operation, Describe(to_key));
}

Result<std::string> S3Client::PresignGet(std::string_view key, std::chrono::seconds expires) {
  // No request follows whose loop would retry a failed credential fetch:
  // this is that loop.
  SPOOL_ASSIGN_OR_RETURN(Credentials credentials,
                         Retry(
                             config_.retry.policy, Idempotency::kIdempotent, "presign " + Describe(key),
                             [&] { return credentials_->Get(); }, config_.retry.environment));
  const Location location = CurrentLocation();
  std::string host, path;
  Address(location.endpoint, key, &host, &path);
  SignableRequest signable{"GET", path, {}, {{"host", host}}, ""};
  std::string query = Presign(signable, credentials, SigningScope{location.region, "s3"},
                              std::chrono::system_clock::now(), expires);
  return location.endpoint.scheme + "://" + host + path + "?" + query;
}

}  // namespace spool::s3
