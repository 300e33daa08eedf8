// The libcurl HttpTransport.
//
// Threading: each Send checks an easy handle out of a pool, so any number of
// threads can send at once; an easy handle is only ever used by one thread at
// a time. Connections live in the easy handle's own cache and are reused by
// the next request that checks the handle out (libcurl does not support one
// connection cache shared by concurrent threads). DNS answers and TLS
// sessions are shared by all handles through a CURLSH guarded by mutexes.
//
// Cancellation: a request runs under the sending thread's current
// CancelToken (core/cancel.h). A cancelled token fails Send before anything
// is sent, and aborts a transfer in flight from curl's progress callback,
// which curl calls several times a second while a transfer runs or waits.
#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "spool/core/cancel.h"
#include "spool/core/env.h"
#include "spool/core/http/transport.h"
#include "spool/core/log.h"

namespace spool {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;
constexpr long kReceiveBufferSize = 256 * 1024;
// curl fills this much of a request body per read callback and hands it to
// send() or SSL_write() at once. Its 64 KiB default cost a 1 GiB upload
// 33,000 poll() calls over TLS; 512 KiB cut them to 4,400 and the client's
// CPU by about 5% (docs/performance.md). Memory: 512 KiB per handle that
// has sent a body (curl allocates it at the first upload).
constexpr long kUploadBufferSize = 512 * 1024;

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    // OpenSSL would otherwise register its cleanup with atexit when first
    // initialised; if that happens after the default executor registered its
    // shutdown, OpenSSL is torn down first, under worker threads still
    // signing or encrypting (a crash at exit). Without the handler, the
    // operating system reclaims OpenSSL's memory at exit.
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
    curl_global_init(CURL_GLOBAL_ALL);
  });
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' ||
                           text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

// DNS cache and TLS sessions shared by every easy handle of one transport.
class CurlShare {
 public:
  CurlShare() : share_(curl_share_init()) {
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &CurlShare::Lock);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &CurlShare::Unlock);
    curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    // Never CURL_LOCK_DATA_CONNECT: each handle tracks its own sockets.
  }
  ~CurlShare() { curl_share_cleanup(share_); }
  CurlShare(const CurlShare&) = delete;
  CurlShare& operator=(const CurlShare&) = delete;

  CURLSH* get() const { return share_; }

 private:
  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* self) {
    static_cast<CurlShare*>(self)->mutexes_[data].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* self) {
    static_cast<CurlShare*>(self)->mutexes_[data].unlock();
  }

  CURLSH* share_;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> mutexes_;
};

// The state of one exchange, reached from curl's callbacks.
struct Exchange {
  const HttpRequest* request = nullptr;
  std::string_view what;  // "METHOD redacted-url", for messages
  ResponseSink* sink = nullptr;
  HttpResponse response;
  size_t body_offset = 0;          // next byte of request->body to send
  bool headers_delivered = false;  // sink->OnHeaders has been called
  Status callback_error;           // why a callback aborted the transfer
  CancelToken cancel;              // the sender's: checked by OnProgress
  CURL* handle = nullptr;

  Status DeliverHeaders() {
    headers_delivered = true;
    return sink ? sink->OnHeaders(response.status, response.headers) : OkStatus();
  }
};

// Acknowledges what has arrived on the exchange's connection now, instead of
// after the kernel's delayed-ACK timer. A server whose response leaves as
// two writes (headers, then a body shorter than a segment) holds the body
// back under Nagle's algorithm until the headers are acknowledged, and a
// client that has just sent a request on a kept-alive connection delays
// that ACK by up to 40 ms: measured on Ceph RGW, a GET of a 1 KiB object
// took 42-47 ms (the body 41 ms after the headers; boto3 alike), and 1 ms
// with this. Linux only; elsewhere nothing.
//
// The sockets are tracked per handle (CURLINFO_ACTIVESOCKET gives none while
// a transfer runs), all of them: a handle's cache keeps a connection per
// host (GCS's API and its token endpoint), and a connect may open several
// (IPv6 and IPv4 at once). The ACK goes to each; on an idle one it does
// nothing. Only the thread using the handle touches its list (libcurl calls
// both callbacks from the transfer or from the cleanup). Connections must
// never be shared between handles (CURL_LOCK_DATA_CONNECT in CurlShare): a
// connection would outlive its handle's list.
struct HandleSockets {
  std::vector<curl_socket_t> open;
};

int OnSocketOpened(void* user, curl_socket_t socket, curlsocktype purpose) {
  if (purpose == CURLSOCKTYPE_IPCXN) static_cast<HandleSockets*>(user)->open.push_back(socket);
  return CURL_SOCKOPT_OK;
}

int OnSocketClosed(void* user, curl_socket_t socket) {
  std::erase(static_cast<HandleSockets*>(user)->open, socket);
  return close(socket);
}

void AcknowledgeNow(CURL* handle) {
#ifdef TCP_QUICKACK
  HandleSockets* tracked = nullptr;
  curl_easy_getinfo(handle, CURLINFO_PRIVATE, &tracked);
  if (tracked == nullptr) return;
  const int on = 1;
  for (curl_socket_t socket : tracked->open) setsockopt(socket, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof(on));
#else
  (void)handle;
#endif
}

// curl_easy_cleanup, and the handle's HandleSockets after it (cleanup closes
// the connection through OnSocketClosed).
void DestroyHandle(CURL* handle) {
  HandleSockets* tracked = nullptr;
  curl_easy_getinfo(handle, CURLINFO_PRIVATE, &tracked);
  curl_easy_cleanup(handle);
  delete tracked;
}

size_t OnHeaderLine(char* data, size_t size, size_t count, void* user) {
  auto& exchange = *static_cast<Exchange*>(user);
  const size_t length = size * count;
  std::string_view line(data, length);
  if (StartsWith(line, "HTTP/")) {
    AcknowledgeNow(exchange.handle);
    // A new status line: an interim answer (100 Continue) or a redirect is
    // forgotten, only the final response's headers are kept.
    exchange.response.headers = HttpHeaders();
    size_t space = line.find(' ');
    exchange.response.status = space == line.npos ? 0 : std::atoi(line.data() + space + 1);
    return length;
  }
  line = Trim(line);
  if (line.empty()) return length;
  size_t colon = line.find(':');
  if (colon == line.npos) return length;  // not a header (obsolete line folding)
  exchange.response.headers.Add(std::string(Trim(line.substr(0, colon))),
                                std::string(Trim(line.substr(colon + 1))));
  return length;
}

size_t OnBodyData(char* data, size_t size, size_t count, void* user) {
  auto& exchange = *static_cast<Exchange*>(user);
  const size_t length = size * count;
  std::string_view chunk(data, length);
  if (!exchange.response.ok()) {
    auto& error_body = exchange.response.error_body;
    error_body.append(chunk.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body.size())));
    return length;
  }
  if (!exchange.headers_delivered) exchange.callback_error = exchange.DeliverHeaders();
  if (exchange.callback_error.ok() && exchange.sink) {
    exchange.callback_error = exchange.sink->Write(chunk);
  }
  if (!exchange.callback_error.ok()) return 0;  // aborts with CURLE_WRITE_ERROR
  exchange.response.bytes_received += length;
  return length;
}

size_t OnReadBody(char* buffer, size_t size, size_t count, void* user) {
  auto& exchange = *static_cast<Exchange*>(user);
  const HttpRequest& request = *exchange.request;
  size_t capacity = size * count;
  if (!request.body_source) {
    size_t n = std::min(capacity, request.body.size() - exchange.body_offset);
    std::copy_n(request.body.data() + exchange.body_offset, n, buffer);
    exchange.body_offset += n;
    exchange.response.bytes_sent += n;
    return n;
  }
  const bool sized = request.body_size >= 0;
  if (sized) {
    capacity = std::min<uint64_t>(capacity, request.body_size - exchange.response.bytes_sent);
    if (capacity == 0) return 0;
  }
  Result<size_t> n = request.body_source->Read(std::span<char>(buffer, capacity));
  if (!n.ok()) {
    exchange.callback_error = n.status();
    return CURL_READFUNC_ABORT;
  }
  if (*n == 0 && sized) {
    exchange.callback_error =
        DataLossError(std::string(exchange.what) + ": the request body ended after " +
                      std::to_string(exchange.response.bytes_sent) + " of the " +
                      std::to_string(request.body_size) +
                      " bytes announced; was the source changed while it was being sent?");
    return CURL_READFUNC_ABORT;
  }
  exchange.response.bytes_sent += *n;
  return *n;
}

// curl seeks back when it must send the body again (a reused connection that
// turned out to be closed, an authentication round trip).
int OnSeekBody(void* user, curl_off_t offset, int origin) {
  auto& exchange = *static_cast<Exchange*>(user);
  const HttpRequest& request = *exchange.request;
  if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
  if (request.body_source) {
    if (offset != 0 || !request.body_source->Rewind()) return CURL_SEEKFUNC_CANTSEEK;
  } else {
    if (static_cast<uint64_t>(offset) > request.body.size()) return CURL_SEEKFUNC_FAIL;
    exchange.body_offset = static_cast<size_t>(offset);
  }
  exchange.response.bytes_sent = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// curl's progress callback: a non-zero return aborts the transfer.
int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& exchange = *static_cast<Exchange*>(user);
  if (!exchange.cancel.cancelled()) return 0;
  exchange.callback_error = CancelledError(std::string(exchange.what) + ": cancelled");
  return 1;
}

// Returns curl's own explanation when it gave one, else the generic text.
std::string CurlDetail(CURLcode code, const char* error_buffer) {
  std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
  while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
  return detail;
}

class CurlTransport : public HttpTransport {
 public:
  explicit CurlTransport(const HttpOptions& options) : options_(options) {
    if (options_.ca_bundle.empty()) {
      const Env env = CurrentEnv();
      for (const char* variable : {"CURL_CA_BUNDLE", "SSL_CERT_FILE"}) {
        if (auto value = env.Get(variable)) {
          options_.ca_bundle = *value;
          break;
        }
      }
    }
  }

  ~CurlTransport() override {
    for (CURL* handle : idle_) DestroyHandle(handle);
  }

  Result<HttpResponse> Send(const HttpRequest& request, ResponseSink* sink) override;

 private:
  struct Checkin {
    CurlTransport* transport;
    void operator()(CURL* handle) const { transport->Return(handle); }
  };
  using Lease = std::unique_ptr<CURL, Checkin>;

  Result<Lease> Checkout();
  void Return(CURL* handle);
  CURL* NewHandle() const;
  Status MapError(CURLcode code, const char* error_buffer, const std::string& what,
                  std::chrono::milliseconds total_timeout) const;

  HttpOptions options_;
  CurlShare share_;
  std::mutex mutex_;
  std::vector<CURL*> idle_;  // most recently used last: its connection is warm
};

CURL* CurlTransport::NewHandle() const {
  CURL* handle = curl_easy_init();
  if (!handle) return nullptr;
  curl_easy_setopt(handle, CURLOPT_SHARE, share_.get());
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM: we run in many threads
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  // The path as written: curl would resolve "." and ".." segments, and so ask
  // for another object than the key a request names (and signs).
  curl_easy_setopt(handle, CURLOPT_PATH_AS_IS, 1L);
  // HTTP/1.1: object stores get their throughput from parallel connections.
  curl_easy_setopt(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(handle, CURLOPT_BUFFERSIZE, kReceiveBufferSize);
  curl_easy_setopt(handle, CURLOPT_UPLOAD_BUFFERSIZE, kUploadBufferSize);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options_.low_speed_bytes));
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME,
                   static_cast<long>(options_.low_speed_time.count()));
  curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
  curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
  if (!options_.ca_bundle.empty()) {
    curl_easy_setopt(handle, CURLOPT_CAINFO, options_.ca_bundle.c_str());
  }
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, &OnHeaderLine);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &OnBodyData);
  curl_easy_setopt(handle, CURLOPT_READFUNCTION, &OnReadBody);
  curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, &OnSeekBody);
  curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  auto* tracked = new HandleSockets;
  curl_easy_setopt(handle, CURLOPT_PRIVATE, tracked);
  curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, &OnSocketOpened);
  curl_easy_setopt(handle, CURLOPT_SOCKOPTDATA, tracked);
  curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, &OnSocketClosed);
  curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, tracked);
  return handle;
}

Result<CurlTransport::Lease> CurlTransport::Checkout() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      CURL* handle = idle_.back();
      idle_.pop_back();
      return Lease(handle, Checkin{this});
    }
  }
  CURL* handle = NewHandle();
  if (!handle) return ResourceExhaustedError("could not create a libcurl handle (out of memory?)");
  return Lease(handle, Checkin{this});
}

void CurlTransport::Return(CURL* handle) {
  {
    std::lock_guard lock(mutex_);
    if (idle_.size() < static_cast<size_t>(std::max(options_.max_connections, 1))) {
      idle_.push_back(handle);
      return;
    }
  }
  DestroyHandle(handle);  // more handles than we keep connections for
}

Status CurlTransport::MapError(CURLcode code, const char* error_buffer, const std::string& what,
                               std::chrono::milliseconds total_timeout) const {
  const std::string detail = CurlDetail(code, error_buffer);
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      if (StartsWith(detail, "Operation too slow")) {
        return DeadlineExceededError(
            what + ": transfer stalled (less than " + std::to_string(options_.low_speed_bytes) +
            " bytes/s for " + std::to_string(options_.low_speed_time.count()) +
            " s); the server or network stopped moving data, retry later (" + detail + ")");
      }
      if (total_timeout.count() > 0 && !StartsWith(detail, "Connection timed out") &&
          !StartsWith(detail, "Failed to connect")) {
        return DeadlineExceededError(
            what + ": did not finish within the " + std::to_string(total_timeout.count()) +
            " ms timeout; raise the timeout or move less data per request (" + detail + ")");
      }
      return DeadlineExceededError(what + ": timed out connecting to the server (" + detail + ")");
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return UnavailableError(what + ": could not resolve the host name; check the endpoint (" +
                              detail + ")");
    case CURLE_COULDNT_CONNECT:
      return UnavailableError(what + ": could not connect; is the server running and reachable? (" +
                              detail + ")");
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_FAIL_REWIND:
    case CURLE_WEIRD_SERVER_REPLY:
      return UnavailableError(what + ": the connection failed mid-transfer (" + detail + ")");
    case CURLE_SSL_CONNECT_ERROR:
      return UnavailableError(what + ": TLS handshake failed (" + detail + ")");
    case CURLE_PEER_FAILED_VERIFICATION:
      return UnavailableError(
          what +
          ": the server's TLS certificate was not trusted; pass the CA bundle that signed "
          "it (--ca-bundle or AWS_CA_BUNDLE) (" +
          detail + ")");
    case CURLE_SSL_CACERT_BADFILE:
      return InvalidArgumentError(what + ": could not read the CA bundle '" + options_.ca_bundle +
                                  "'; check --ca-bundle / AWS_CA_BUNDLE (" + detail + ")");
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
      return UnavailableError(what + ": TLS setup failed (" + detail + ")");
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return InvalidArgumentError(what + ": not a valid http(s) URL (" + detail + ")");
    case CURLE_OUT_OF_MEMORY:
      return ResourceExhaustedError(what + ": out of memory (" + detail + ")");
    default:
      return InternalError(what + ": libcurl error " + std::to_string(code) + " (" + detail + ")");
  }
}

// The headers as curl wants them, plus an empty "Expect:" so curl never
// waits for 100 Continue before sending a body.
struct CurlHeaderList {
  explicit CurlHeaderList(const HttpHeaders& headers) {
    for (const auto& [name, value] : headers.entries()) {
      // "Name;" is curl's spelling of a header with an empty value.
      std::string line = value.empty() ? name + ";" : name + ": " + value;
      list = curl_slist_append(list, line.c_str());
    }
    if (!headers.Has("Expect")) list = curl_slist_append(list, "Expect:");
  }
  ~CurlHeaderList() { curl_slist_free_all(list); }
  CurlHeaderList(const CurlHeaderList&) = delete;
  CurlHeaderList& operator=(const CurlHeaderList&) = delete;

  curl_slist* list = nullptr;
};

bool HasBody(const HttpRequest& request) {
  return request.body_source || !request.body.empty() || request.method == "PUT" ||
         request.method == "POST" || request.method == "PATCH";
}

void LogHeaders(std::string_view direction, const HttpHeaders& headers) {
  for (const auto& [name, value] : headers.entries()) {
    log::Debug("http", std::string(direction) + " " + name + ": " + log::RedactHeader(name, value));
  }
}

Result<HttpResponse> CurlTransport::Send(const HttpRequest& request, ResponseSink* sink) {
  const std::string what = request.method + " " + log::RedactUrl(request.url);
  const CancelToken cancel = CancelToken::Current();
  SPOOL_RETURN_IF_ERROR(cancel.Check(what));
  SPOOL_ASSIGN_OR_RETURN(Lease lease, Checkout());
  CURL* handle = lease.get();

  Exchange exchange;
  exchange.request = &request;
  exchange.what = what;
  exchange.sink = sink;
  exchange.cancel = cancel;
  exchange.handle = handle;
  CurlHeaderList headers(request.headers);
  char error_buffer[CURL_ERROR_SIZE] = {};
  const std::chrono::milliseconds total_timeout =
      request.total_timeout.value_or(options_.total_timeout);

  // HTTPGET resets whatever method the handle's previous request used.
  curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, static_cast<char*>(nullptr));
  if (request.method == "HEAD") {
    curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
  } else if (HasBody(request)) {
    // Upload mode sends Content-Length (or chunked when the size is unknown)
    // and, unlike POST mode, adds no Content-Type of its own.
    const int64_t size = request.body_source ? request.body_size : int64_t(request.body.size());
    curl_easy_setopt(handle, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(handle, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
    if (request.method != "PUT") {
      curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
  } else if (request.method != "GET") {
    curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  curl_easy_setopt(handle, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(total_timeout.count()));
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &exchange);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(handle, CURLOPT_READDATA, &exchange);
  curl_easy_setopt(handle, CURLOPT_SEEKDATA, &exchange);
  curl_easy_setopt(handle, CURLOPT_XFERINFODATA, &exchange);

  const bool debug = log::DebugEnabled();
  if (debug) {
    log::Debug("http", what);
    LogHeaders(">", request.headers);
  }
  const auto start = std::chrono::steady_clock::now();
  const CURLcode code = curl_easy_perform(handle);
  // The handle goes back to the pool: nothing of this request may stay in it.
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(nullptr));

  Status status;
  if (code == CURLE_OK) {
    long response_code = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response_code);
    exchange.response.status = static_cast<int>(response_code);
    if (exchange.response.ok() && !exchange.headers_delivered) status = exchange.DeliverHeaders();
  } else if (!exchange.callback_error.ok()) {
    status = exchange.callback_error;  // our sink or body source stopped the transfer
  } else {
    status = MapError(code, error_buffer, what, total_timeout);
  }

  if (debug) {
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    char milliseconds[32];
    std::snprintf(milliseconds, sizeof(milliseconds), "%.1f", elapsed.count());
    std::string outcome =
        status.ok() ? "HTTP " + std::to_string(exchange.response.status) : status.ToString();
    log::Debug("http", what + " -> " + outcome + ", " +
                           std::to_string(exchange.response.bytes_sent) + " bytes sent, " +
                           std::to_string(exchange.response.bytes_received) + " received, " +
                           milliseconds + " ms");
    if (status.ok()) LogHeaders("<", exchange.response.headers);
  }
  if (!status.ok()) return status;
  return std::move(exchange.response);
}

}  // namespace

std::shared_ptr<HttpTransport> MakeCurlTransport(const HttpOptions& options) {
  InitCurlOnce();
  return std::make_shared<CurlTransport>(options);
}

}  // namespace spool
