#include "spool/gcs/client.h"

#include <algorithm>
#include <charconv>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "spool/core/crc32c.h"
#include "spool/core/storage/ranged_reads.h"
#include "spool/core/strings.h"
#include "spool/gcs/errors.h"
#include "spool/gcs/json.h"
#include "spool/gcs/url_encoding.h"

namespace spool::gcs {
namespace {

using Query = std::vector<std::pair<std::string, std::string>>;

void AddPreconditions(Query& query, const Preconditions& p) {
  if (p.if_generation_match) query.emplace_back("ifGenerationMatch", std::to_string(*p.if_generation_match));
  if (p.if_generation_not_match) {
    query.emplace_back("ifGenerationNotMatch", std::to_string(*p.if_generation_not_match));
  }
  if (p.if_metageneration_match) {
    query.emplace_back("ifMetagenerationMatch", std::to_string(*p.if_metageneration_match));
  }
}

std::string WithQuery(std::string url, const Query& query) {
  if (query.empty()) return url;
  return url + (url.find('?') == std::string::npos ? "?" : "&") + EncodeQuery(query);
}

// A request body made of pieces that stay where they are (no copy of the
// payload into a multipart body).
class PiecesSource : public BodySource {
 public:
  explicit PiecesSource(std::vector<std::string_view> pieces) : pieces_(std::move(pieces)) {}
  int64_t size() const {
    int64_t total = 0;
    for (auto piece : pieces_) total += static_cast<int64_t>(piece.size());
    return total;
  }
  Result<size_t> Read(std::span<char> buffer) override {
    size_t written = 0;
    while (written < buffer.size() && index_ < pieces_.size()) {
      std::string_view rest = pieces_[index_].substr(offset_);
      const size_t n = std::min(rest.size(), buffer.size() - written);
      std::copy_n(rest.data(), n, buffer.data() + written);
      written += n;
      offset_ += n;
      if (offset_ == pieces_[index_].size()) {
        ++index_;
        offset_ = 0;
      }
    }
    return written;
  }
  bool Rewind() override {
    index_ = 0;
    offset_ = 0;
    return true;
  }

 private:
  std::vector<std::string_view> pieces_;
  size_t index_ = 0;
  size_t offset_ = 0;
};

// A whole decimal number (no sign, no spaces); false otherwise.
template <typename Int>
bool ParseInteger(std::string_view text, Int* out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size();
}

std::string RandomBoundary() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string boundary = "spool_boundary_";
  for (int i = 0; i < 32; ++i) boundary += kChars[rng() % 36];
  return boundary;
}

// A media download's body: forwards the bytes wanted to the caller, skipping
// the head of a 200 that ignored our Range, and remembers what the headers
// said about the object.
class MediaSink : public ResponseSink {
 public:
  // `object_size`: see ReadObjectRequest; `url` names the object in that error.
  MediaSink(const std::function<Status(std::string_view)>& write, uint64_t start, std::optional<uint64_t> wanted,
            std::optional<uint64_t> object_size, const std::string& url)
      : write_(write), start_(start), wanted_(wanted), object_size_(object_size), url_(url) {}

  Status OnHeaders(int status, const HttpHeaders& headers) override {
    status_ = status;
    if (status == 200) skip_ = start_;  // the whole object came back
    if (status == 206) {
      // Never take bytes of another range for the ones asked for.
      const std::string range = headers.Get("Content-Range").value_or("");
      const std::string expected = "bytes " + std::to_string(start_) + "-";
      if (!range.starts_with(expected)) {
        return InternalError("asked for bytes from " + std::to_string(start_) + " but the service sent \"" +
                             range + "\"");
      }
    }
    if (auto generation = headers.Get("x-goog-generation")) ParseInteger(*generation, &generation_);
    // Before any byte is taken: an object of another size is another object
    // (x-goog-stored-content-length, else the total of a 206's Content-Range).
    if (status >= 200 && status < 300 && object_size_) {
      std::optional<uint64_t> stored = ContentRangeTotal(headers);
      uint64_t length = 0;
      if (auto header = headers.Get("x-goog-stored-content-length"); header && ParseInteger(*header, &length)) {
        stored = length;
      }
      if (stored && *stored != *object_size_) return SizeChangedError(url_, *stored, *object_size_);
    }
    for (const auto& [name, value] : headers.entries()) {
      if (!EqualsIgnoreCase(name, "x-goog-hash")) continue;
      size_t pos = 0;
      while (pos < value.size()) {
        size_t end = value.find(',', pos);
        if (end == std::string::npos) end = value.size();
        std::string_view item = std::string_view(value).substr(pos, end - pos);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        uint32_t crc = 0;
        if (item.starts_with("crc32c=") && crc32c::FromBase64(item.substr(7), &crc)) crc32c_ = crc;
        pos = end + 1;
      }
    }
    return OkStatus();
  }

  Status Write(std::string_view data) override {
    if (skip_ > 0) {
      const size_t n = std::min<uint64_t>(skip_, data.size());
      skip_ -= n;
      data.remove_prefix(n);
    }
    if (wanted_) {
      const uint64_t left = *wanted_ - delivered_;
      if (data.size() > left) {
        data = data.substr(0, left);
        enough_ = true;
      }
    }
    if (!data.empty()) {
      SPOOL_RETURN_IF_ERROR(write_(data));
      delivered_ += data.size();
    }
    if (enough_) return CancelledError("the rest of the body is not needed");
    return OkStatus();
  }

  uint64_t delivered() const { return delivered_; }
  bool enough() const { return enough_; }
  int status() const { return status_; }
  int64_t generation() const { return generation_; }
  std::optional<uint32_t> crc32c() const { return crc32c_; }

 private:
  const std::function<Status(std::string_view)>& write_;
  const uint64_t start_;
  const std::optional<uint64_t> wanted_;
  const std::optional<uint64_t> object_size_;
  const std::string& url_;
  uint64_t skip_ = 0;
  uint64_t delivered_ = 0;
  bool enough_ = false;
  int status_ = 0;
  int64_t generation_ = 0;
  std::optional<uint32_t> crc32c_;
};

// 308 answers carry "Range: bytes=0-N" for what was persisted (none: nothing).
Result<uint64_t> CommittedFromRange(const HttpResponse& response) {
  auto range = response.headers.Get("Range");
  if (!range) return uint64_t{0};
  uint64_t last = 0;
  if (!range->starts_with("bytes=0-") || !ParseInteger(std::string_view(*range).substr(8), &last)) {
    return InternalError("resumable upload answered with an unexpected Range: " + *range);
  }
  return last + 1;
}

}  // namespace

GcsClient::GcsClient(ClientOptions options) : options_(std::move(options)) {
  while (!options_.endpoint.empty() && options_.endpoint.back() == '/') options_.endpoint.pop_back();
  if (!options_.throttle)
    options_.throttle = RetryThrottle::ForStore("gs:// at " + options_.endpoint, options_.endpoint);
}

std::string GcsClient::Url(std::string_view bucket, std::string_view name) {
  return "gs://" + std::string(bucket) + "/" + std::string(name);
}

std::string GcsClient::ObjectUrl(std::string_view bucket, std::string_view name) const {
  return options_.endpoint + "/storage/v1/b/" + PercentEncode(bucket) + "/o/" + PercentEncode(name);
}

Result<HttpResponse> GcsClient::Send(HttpRequest& request, ResponseSink* sink) {
  for (int attempt = 0;; ++attempt) {
    SPOOL_ASSIGN_OR_RETURN(std::string authorization, options_.credentials->AuthorizationHeader());
    if (!authorization.empty()) request.headers.Set("Authorization", std::move(authorization));
    SPOOL_ASSIGN_OR_RETURN(HttpResponse response, options_.transport->Send(request, sink));
    if (!response.ok()) NoteRetryAfter(ParseRetryAfter(response.headers.Get("Retry-After").value_or("")));
    const bool can_resend = request.body_source == nullptr || request.body_source->Rewind();
    if (response.status == 401 && request.headers.Has("Authorization") && attempt == 0 && can_resend) {
      options_.credentials->Invalidate();  // the token was revoked or expired early
      continue;
    }
    return response;
  }
}

Idempotency IdempotencyOf(const Preconditions& preconditions) {
  return preconditions.if_generation_match || preconditions.if_metageneration_match ? Idempotency::kIdempotent
                                                                                      : Idempotency::kNonIdempotent;
}

namespace {
// The one retry layer of this client: every retried method runs its single
// exchange through here, so a policy's max_attempts bounds the attempts of
// each exchange, whatever the caller does. Token fetches happen inside the
// attempt (Send) and make one request each (credentials.h), so they are
// bounded by the same attempts. A non-idempotent exchange is tried once, so
// its token is fetched first under the policy: nothing has been sent while
// the token is missing, and a token endpoint that fails once must not fail
// an unconditional write.
template <typename Attempt>
auto CallWithRetry(const ClientOptions& options, Idempotency idempotency, const std::string& what, Attempt attempt,
                   Attempts* attempts = nullptr) -> decltype(attempt()) {
  if (idempotency == Idempotency::kNonIdempotent) {
    Result<std::string> token = Retry(
        options.retry.policy, Idempotency::kIdempotent, what,
        [&] { return options.credentials->AuthorizationHeader(); }, options.retry.environment);
    if (!token.ok()) return token.status();
  }
  return RetryThrottled(
      options.retry.policy, idempotency, what,
      [&] {
        if (attempts != nullptr) ++attempts->count;
        return attempt();
      },
      options.retry.environment, options.throttle.get());
}
}  // namespace

Result<std::string> GcsClient::ExchangeJson(HttpRequest& request, const std::string& what) {
  std::string body;
  StringSink sink(&body);
  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, &sink));
  if (!response.ok()) return ErrorFromResponse(response, what);
  return body;
}

Status GcsClient::InsertBucket(std::string_view bucket, std::string_view project) {
  const std::string what = "create bucket gs://" + std::string(bucket);
  const std::string body = NewBucketJson(bucket);
  // A repeated create cannot replace anything: it answers 409.
  return CallWithRetry(
             options_, Idempotency::kIdempotent, what,
             [&] {
               HttpRequest request;
               request.method = "POST";
               request.url = WithQuery(options_.endpoint + "/storage/v1/b", {{"project", std::string(project)}});
               request.headers.Set("Content-Type", "application/json; charset=UTF-8");
               request.body = body;
               return ExchangeJson(request, what);
             })
      .status();
}

Result<ObjectMetadata> GcsClient::GetObject(std::string_view bucket, std::string_view name,
                                            const Preconditions& preconditions) {
  const std::string what = "stat " + Url(bucket, name);
  Query query;
  AddPreconditions(query, preconditions);
  const std::string url = WithQuery(ObjectUrl(bucket, name), query);
  SPOOL_ASSIGN_OR_RETURN(std::string body, CallWithRetry(options_, Idempotency::kIdempotent, what, [&] {
                           HttpRequest request;
                           request.url = url;
                           return ExchangeJson(request, what);
                         }));
  return ParseObject(body);
}

Result<ReadObjectResult> GcsClient::ReadObject(const ReadObjectRequest& request,
                                               const std::function<Status(std::string_view)>& write) {
  const std::string url = Url(request.bucket, request.name);
  const std::string what = "read " + url;
  ReadObjectResult result;
  std::optional<int64_t> pinned = request.if_generation_match;
  // One download: a retry resumes at the byte the broken attempt reached.
  Status status =
      CallWithRetry(options_, Idempotency::kIdempotent, what, [&]() -> Status {
        const uint64_t start = request.offset + result.bytes;
        std::optional<uint64_t> wanted;
        if (request.length) {
          wanted = *request.length - result.bytes;
          if (*wanted == 0) return OkStatus();
        }
        Query query{{"alt", "media"}};
        if (pinned) query.emplace_back("ifGenerationMatch", std::to_string(*pinned));
        HttpRequest http;
        http.url = WithQuery(ObjectUrl(request.bucket, request.name), query);
        if (start > 0 || wanted) {
          http.headers.Set("Range", "bytes=" + std::to_string(start) + "-" +
                                        (wanted ? std::to_string(start + *wanted - 1) : std::string()));
        }
        MediaSink sink(write, start, wanted, request.object_size, url);
        auto response = Send(http, &sink);
        result.bytes += sink.delivered();
        if (sink.status() >= 200 && sink.status() < 300) {
          // Whatever happens next, a retry must read the same generation.
          if (!pinned && sink.generation() != 0) pinned = sink.generation();
          result.generation = sink.generation();
          result.crc32c = sink.crc32c();
        }
        if (!response.ok()) return sink.enough() ? OkStatus() : response.status();
        if (response->ok()) return OkStatus();
        // Replaced: FailedPrecondition with the 412, which callers that
        // read what they listed take as "changed since" (as on S3). Deleted:
        // NotFound, as on S3, from the 404 below.
        if (pinned && response->status == 412) {
          RemoteError remote;
          remote.http_status = 412;
          return FailedPreconditionError(url + " changed since it was opened (generation " + std::to_string(*pinned) +
                                         " is gone); open it again to read the new version")
              .WithRemote(remote);
        }
        if (request.object_size && response->status == 416) {
          RemoteError remote;
          remote.http_status = 416;
          return ShorterThanOpenedError(url, *request.object_size).WithRemote(remote);
        }
        return ErrorFromResponse(*response, what);
      });
  if (!status.ok()) return status;
  return result;
}

Result<ObjectMetadata> GcsClient::InsertObject(std::string_view bucket, const NewObject& object,
                                               std::string_view data, const Preconditions& preconditions,
                                               Attempts* attempts) {
  const std::string what = "write " + Url(bucket, object.name);
  const std::string boundary = RandomBoundary();
  const std::string head = "--" + boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" +
                           NewObjectJson(object) + "\r\n--" + boundary + "\r\nContent-Type: " +
                           (object.content_type.empty() ? "application/octet-stream" : object.content_type) +
                           "\r\n\r\n";
  const std::string tail = "\r\n--" + boundary + "--\r\n";
  Query query{{"uploadType", "multipart"}};
  AddPreconditions(query, preconditions);
  const std::string url = WithQuery(options_.endpoint + "/upload/storage/v1/b/" + PercentEncode(bucket) + "/o", query);
  PiecesSource source({head, data, tail});
  SPOOL_ASSIGN_OR_RETURN(std::string body, CallWithRetry(
                                               options_, IdempotencyOf(preconditions), what,
                                               [&] {
                                                 source.Rewind();
                                                 HttpRequest request;
                                                 request.method = "POST";
                                                 request.url = url;
                                                 request.headers.Set("Content-Type",
                                                                     "multipart/related; boundary=" + boundary);
                                                 request.body_source = &source;
                                                 request.body_size = source.size();
                                                 return ExchangeJson(request, what);
                                               },
                                               attempts));
  return ParseObject(body);
}

Result<std::string> GcsClient::StartResumableUpload(std::string_view bucket, const NewObject& object,
                                                    const Preconditions& preconditions) {
  const std::string what = "start a resumable upload to " + Url(bucket, object.name);
  Query query{{"uploadType", "resumable"}, {"name", object.name}};
  AddPreconditions(query, preconditions);
  const std::string url = WithQuery(options_.endpoint + "/upload/storage/v1/b/" + PercentEncode(bucket) + "/o", query);
  const std::string metadata = NewObjectJson(object);
  // Starting a session twice only leaves an unused session behind.
  return CallWithRetry(options_, Idempotency::kIdempotent, what, [&]() -> Result<std::string> {
    HttpRequest request;
    request.method = "POST";
    request.url = url;
    request.headers.Set("Content-Type", "application/json; charset=UTF-8");
    if (!object.content_type.empty()) request.headers.Set("X-Upload-Content-Type", object.content_type);
    request.body = metadata;
    SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, nullptr));
    if (!response.ok()) return ErrorFromResponse(response, what);
    auto location = response.headers.Get("Location");
    if (!location || location->empty()) return InternalError(what + ": the answer has no Location header");
    return *location;
  });
}

namespace {
Result<UploadStatus> ParseUploadAnswer(const HttpResponse& response, const std::string& body,
                                       const std::string& what) {
  if (response.status == 308) {
    SPOOL_ASSIGN_OR_RETURN(uint64_t committed, CommittedFromRange(response));
    return UploadStatus{committed, std::nullopt};
  }
  if (!response.ok()) return ErrorFromResponse(response, what);
  SPOOL_ASSIGN_OR_RETURN(ObjectMetadata object, ParseObject(body));
  return UploadStatus{object.size, std::move(object)};
}
}  // namespace

Result<UploadStatus> GcsClient::UploadChunk(const std::string& session_uri, uint64_t offset, std::string_view data,
                                            std::optional<uint64_t> total, std::optional<uint32_t> crc32c) {
  const std::string what = "upload bytes " + std::to_string(offset) + "+" + std::to_string(data.size()) +
                           " of a resumable upload";
  HttpRequest request;
  request.method = "PUT";
  request.url = session_uri;
  const std::string size = total ? std::to_string(*total) : "*";
  if (data.empty()) {
    request.headers.Set("Content-Range", "bytes */" + size);
  } else {
    request.headers.Set("Content-Range", "bytes " + std::to_string(offset) + "-" +
                                             std::to_string(offset + data.size() - 1) + "/" + size);
  }
  if (crc32c) request.headers.Set("X-Goog-Hash", "crc32c=" + crc32c::ToBase64(*crc32c));
  request.body = data;
  std::string body;
  StringSink sink(&body);
  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, &sink));
  return ParseUploadAnswer(response, body, what);
}

Result<UploadStatus> GcsClient::QueryUpload(const std::string& session_uri, std::optional<uint64_t> total) {
  HttpRequest request;
  request.method = "PUT";
  request.url = session_uri;
  request.headers.Set("Content-Range", "bytes */" + (total ? std::to_string(*total) : std::string("*")));
  std::string body;
  StringSink sink(&body);
  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, &sink));
  return ParseUploadAnswer(response, body, "ask a resumable upload session how much it has");
}

Status GcsClient::CancelUpload(const std::string& session_uri) {
  HttpRequest request;
  request.method = "DELETE";
  request.url = session_uri;
  SPOOL_ASSIGN_OR_RETURN(HttpResponse response, Send(request, nullptr));
  if (response.ok() || response.status == 499 || response.status == 404 || response.status == 410) {
    return OkStatus();
  }
  return ErrorFromResponse(response, "cancel a resumable upload");
}

Result<ObjectListPage> GcsClient::ListObjects(std::string_view bucket, const ListObjectsRequest& list) {
  const std::string what = "list " + Url(bucket, list.prefix);
  Query query;
  if (!list.prefix.empty()) query.emplace_back("prefix", list.prefix);
  if (!list.delimiter.empty()) query.emplace_back("delimiter", list.delimiter);
  if (!list.page_token.empty()) query.emplace_back("pageToken", list.page_token);
  if (list.max_results > 0) query.emplace_back("maxResults", std::to_string(list.max_results));
  if (!list.fields.empty()) query.emplace_back("fields", list.fields);
  const std::string url = WithQuery(options_.endpoint + "/storage/v1/b/" + PercentEncode(bucket) + "/o", query);
  SPOOL_ASSIGN_OR_RETURN(std::string body, CallWithRetry(options_, Idempotency::kIdempotent, what, [&] {
                           HttpRequest request;
                           request.url = url;
                           return ExchangeJson(request, what);
                         }));
  return ParseObjectList(body);
}

Status GcsClient::DeleteObject(std::string_view bucket, std::string_view name, const Preconditions& preconditions,
                               Attempts* attempts) {
  const std::string what = "delete " + Url(bucket, name);
  Query query;
  AddPreconditions(query, preconditions);
  const std::string url = WithQuery(ObjectUrl(bucket, name), query);
  return CallWithRetry(
             options_, IdempotencyOf(preconditions), what,
             [&] {
               HttpRequest request;
               request.method = "DELETE";
               request.url = url;
               return ExchangeJson(request, what);
             },
             attempts)
      .status();
}

Result<RewriteProgress> GcsClient::RewriteObject(std::string_view source_bucket, std::string_view source_name,
                                                 std::optional<int64_t> source_generation, std::string_view bucket,
                                                 std::string_view name, const std::string& rewrite_token,
                                                 const Preconditions& preconditions) {
  const std::string what = "copy " + Url(source_bucket, source_name) + " to " + Url(bucket, name);
  Query query;
  if (source_generation) query.emplace_back("sourceGeneration", std::to_string(*source_generation));
  if (!rewrite_token.empty()) query.emplace_back("rewriteToken", rewrite_token);
  AddPreconditions(query, preconditions);
  const std::string url = WithQuery(ObjectUrl(source_bucket, source_name) + "/rewriteTo/b/" + PercentEncode(bucket) +
                                        "/o/" + PercentEncode(name),
                                    query);
  // Rewriting one pinned source generation again yields the same object.
  const Idempotency idempotency = source_generation ? Idempotency::kIdempotent : IdempotencyOf(preconditions);
  SPOOL_ASSIGN_OR_RETURN(std::string body, CallWithRetry(options_, idempotency, what, [&] {
                           HttpRequest request;
                           request.method = "POST";
                           request.url = url;
                           request.headers.Set("Content-Type", "application/json; charset=UTF-8");
                           request.body = "{}";
                           return ExchangeJson(request, what);
                         }));
  return ParseRewriteResponse(body);
}

}  // namespace spool::gcs
