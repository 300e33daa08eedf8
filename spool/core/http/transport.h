// HttpTransport: one HTTP exchange, with bodies streamed both ways.
//
// A non-2xx answer is a response, not an error: Send returns OK with the
// status and headers, and the (small) error body collected in `error_body`
// so the protocol layer can parse the service's error document. Transport
// failures are errors: Unavailable for connection problems (refused, reset,
// TLS handshake), DeadlineExceeded for timeouts and stalled transfers.
//
// Implementations are thread-safe: many threads Send at once, and connections
// are reused across requests.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/core/status.h"

namespace spool {

// Header names compare case-insensitively; order is kept.
class HttpHeaders {
 public:
  void Add(std::string name, std::string value);
  void Set(std::string name, std::string value);  // replaces every `name`
  std::optional<std::string> Get(std::string_view name) const;  // the first
  bool Has(std::string_view name) const { return Get(name).has_value(); }
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// The whole object's size that a 206's Content-Range states ("bytes
// 0-99/1234": 1234); none without the header, or where the server does not
// know it ("/*").
std::optional<uint64_t> ContentRangeTotal(const HttpHeaders& headers);

// A request body produced on demand (a file, a pipe, a part of a buffer).
class BodySource {
 public:
  virtual ~BodySource() = default;
  // Fills `buffer`; returns the bytes written, 0 at the end.
  virtual Result<size_t> Read(std::span<char> buffer) = 0;
  // Starts over (for a retry or a redirect); false if it cannot.
  virtual bool Rewind() = 0;
};

// Where a 2xx response body goes. Write may be called many times.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // Called once with the status and headers before the first Write of a 2xx
  // body; an error aborts the transfer and becomes Send's result.
  virtual Status OnHeaders(int /*status*/, const HttpHeaders& /*headers*/) { return OkStatus(); }
  virtual Status Write(std::string_view data) = 0;
};

// Writes a response body straight into a caller's buffer. A body longer than
// the buffer is an error (OutOfRange); `size()` says how much arrived.
class BufferSink : public ResponseSink {
 public:
  explicit BufferSink(std::span<char> buffer) : buffer_(buffer) {}
  Status Write(std::string_view data) override;
  size_t size() const { return size_; }

 private:
  std::span<char> buffer_;
  size_t size_ = 0;
};

// Appends a response body to a string (for small documents: XML, JSON).
class StringSink : public ResponseSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  Status Write(std::string_view data) override {
    out_->append(data);
    return OkStatus();
  }

 private:
  std::string* out_;
};

struct HttpRequest {
  std::string method = "GET";
  // Absolute, already percent-encoded, and sent as written: "." and ".."
  // segments are not resolved, since object keys may hold them (S3 stores
  // "a/./b" as such, and the signature covers the path as written).
  std::string url;
  HttpHeaders headers;
  // The body: either `body` (memory the caller keeps alive during Send) or
  // `body_source` with `body_size` bytes (use -1 for chunked, unknown size).
  std::string_view body;
  BodySource* body_source = nullptr;
  int64_t body_size = 0;
  // Overrides the transport's timeouts for this request when set.
  std::optional<std::chrono::milliseconds> total_timeout;
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string error_body;        // a non-2xx body, truncated to 64 KiB
  uint64_t bytes_received = 0;   // body bytes delivered to the sink
  uint64_t bytes_sent = 0;       // request body bytes sent
  bool ok() const { return status >= 200 && status < 300; }
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Sends `request`; a 2xx body goes to `sink` (or is discarded when null).
  virtual Result<HttpResponse> Send(const HttpRequest& request, ResponseSink* sink) = 0;
};

struct HttpOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  // A transfer slower than low_speed_bytes per second for low_speed_time is
  // stalled: DeadlineExceeded.
  int64_t low_speed_bytes = 1;
  std::chrono::seconds low_speed_time{30};
  std::chrono::milliseconds total_timeout{0};  // 0: none
  bool verify_tls = true;
  std::string ca_bundle;   // PEM file; empty: the system's
  int max_connections = 64;
};

// The libcurl transport. `options.ca_bundle` empty means: CURL_CA_BUNDLE or
// SSL_CERT_FILE from the environment when set, else the system store
// (backends add their own conventions, e.g. AWS_CA_BUNDLE, before calling).
std::shared_ptr<HttpTransport> MakeCurlTransport(const HttpOptions& options);

}  // namespace spool
