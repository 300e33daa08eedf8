// The libcurl transport against tests/servers/http_test_server.py on
// 127.0.0.1.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <regex>
#include <thread>
#include <vector>

#include "spool/core/cancel.h"
#include "spool/core/http/transport.h"
#include "tests/http/http_test_server.h"

namespace spool {
namespace {

using spool::testing::HttpTestServer;
using spool::testing::PatternContent;

// The raw text of a number or boolean field in the server's flat JSON.
std::string JsonField(const std::string& json, const std::string& name) {
  std::smatch match;
  std::regex pattern("\"" + name + "\": ([0-9a-z]+)");
  return std::regex_search(json, match, pattern) ? match[1].str() : "<missing " + name + ">";
}

// The echoed request headers, "name: value" per line, lower-cased names.
bool EchoHasHeader(const std::string& json, const std::string& name) {
  std::string lower = json;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  return lower.find("[\"" + name + "\", ") != std::string::npos;
}

std::string Crc32(std::string_view data) {
  return std::to_string(crc32(0, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

// Records what the transport hands a sink, and can fail on demand.
class RecordingSink : public ResponseSink {
 public:
  Status OnHeaders(int status, const HttpHeaders& headers) override {
    ++header_calls;
    headers_before_body = body.empty();
    status_seen = status;
    content_length = headers.Get("Content-Length").value_or("");
    return headers_error;
  }
  Status Write(std::string_view data) override {
    ++writes;
    body.append(data);
    return writes >= fail_at_write ? CancelledError("sink gave up") : OkStatus();
  }

  int header_calls = 0;
  bool headers_before_body = false;
  int status_seen = 0;
  std::string content_length;
  int writes = 0;
  std::string body;
  Status headers_error;
  int fail_at_write = 1 << 30;
};

// A body produced in small reads, as a file or a pipe would.
class PatternSource : public BodySource {
 public:
  explicit PatternSource(size_t size, size_t max_read = 7000)
      : data_(PatternContent(size)), max_read_(max_read) {}
  Result<size_t> Read(std::span<char> buffer) override {
    ++reads;
    if (reads == fail_at_read) return DataLossError("disk went away");
    size_t n = std::min({buffer.size(), max_read_, data_.size() - offset_});
    std::copy_n(data_.data() + offset_, n, buffer.data());
    offset_ += n;
    return n;
  }
  bool Rewind() override {
    offset_ = 0;
    return true;
  }
  const std::string& data() const { return data_; }

  int reads = 0;
  int fail_at_read = -1;

 private:
  std::string data_;
  size_t max_read_;
  size_t offset_ = 0;
};

class CurlTransportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = HttpTestServer::Start().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    transport_ = MakeCurlTransport(HttpOptions{});
  }

  static std::string Url(std::string_view path) { return server_->Url(path); }

  Result<HttpResponse> Get(std::string_view path, ResponseSink* sink) {
    HttpRequest request;
    request.url = Url(path);
    return transport_->Send(request, sink);
  }

  // The number of TCP connections the server has accepted so far.
  int ServerConnections() {
    std::string body;
    StringSink sink(&body);
    auto response = Get("/connections", &sink);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return std::atoi(body.c_str());
  }

  static HttpTestServer* server_;
  std::shared_ptr<HttpTransport> transport_;
};

HttpTestServer* CurlTransportTest::server_ = nullptr;

TEST_F(CurlTransportTest, GetStreamsTheBodyIntoAStringSink) {
  std::string body;
  StringSink sink(&body);
  auto response = Get("/bytes?n=300000", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(response->ok());
  EXPECT_EQ(response->headers.Get("Content-Length"), "300000");
  EXPECT_EQ(response->bytes_received, 300000u);
  EXPECT_EQ(response->bytes_sent, 0u);
  EXPECT_TRUE(response->error_body.empty());
  EXPECT_EQ(body, PatternContent(300000));
}

TEST_F(CurlTransportTest, GetFillsACallersBuffer) {
  std::vector<char> buffer(5000);
  BufferSink sink(buffer);
  auto response = Get("/bytes?n=5000", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(sink.size(), 5000u);
  EXPECT_EQ(std::string(buffer.data(), buffer.size()), PatternContent(5000));
}

TEST_F(CurlTransportTest, BodyLongerThanTheBufferIsOutOfRange) {
  std::vector<char> buffer(100);
  BufferSink sink(buffer);
  auto response = Get("/bytes?n=1000", &sink);
  EXPECT_EQ(response.status().code(), StatusCode::kOutOfRange) << response.status().ToString();
  // The aborted transfer does not poison the transport.
  std::vector<char> exact(1000);
  BufferSink exact_sink(exact);
  EXPECT_TRUE(Get("/bytes?n=1000", &exact_sink).ok());
}

TEST_F(CurlTransportTest, ChunkedResponseArrivesWhole) {
  std::string body;
  StringSink sink(&body);
  auto response = Get("/chunked?n=70000&chunk=999", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->headers.Get("transfer-encoding"), "chunked");
  EXPECT_EQ(body, PatternContent(70000));
}

TEST_F(CurlTransportTest, NullSinkDiscardsTheBody) {
  auto response = Get("/bytes?n=4096", nullptr);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->bytes_received, 4096u);
}

TEST_F(CurlTransportTest, OnHeadersComesOnceBeforeTheBody) {
  RecordingSink sink;
  auto response = Get("/bytes?n=1000000", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(sink.header_calls, 1);
  EXPECT_TRUE(sink.headers_before_body);
  EXPECT_EQ(sink.status_seen, 200);
  EXPECT_EQ(sink.content_length, "1000000");
  EXPECT_GT(sink.writes, 1);
  EXPECT_EQ(sink.body, PatternContent(1000000));
}

TEST_F(CurlTransportTest, OnHeadersComesEvenForAnEmptyBody) {
  RecordingSink sink;
  auto response = Get("/bytes?n=0", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(sink.header_calls, 1);
  EXPECT_EQ(sink.writes, 0);
  EXPECT_EQ(sink.content_length, "0");
}

TEST_F(CurlTransportTest, HeadReturnsHeadersWithoutBody) {
  RecordingSink sink;
  HttpRequest request;
  request.method = "HEAD";
  request.url = Url("/bytes?n=12345");
  auto response = transport_->Send(request, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->headers.Get("content-length"), "12345");
  EXPECT_EQ(response->bytes_received, 0u);
  EXPECT_EQ(sink.header_calls, 1);
  EXPECT_EQ(sink.writes, 0);
  // The connection is still in step: the next GET reads its own answer.
  std::string body;
  StringSink next(&body);
  ASSERT_TRUE(Get("/bytes?n=10", &next).ok());
  EXPECT_EQ(body, PatternContent(10));
}

TEST_F(CurlTransportTest, PutFromMemorySendsExactlyTheBody) {
  const std::string payload = PatternContent(2'000'000);
  HttpRequest request;
  request.method = "PUT";
  request.url = Url("/echo");
  request.body = payload;
  std::string echo;
  StringSink sink(&echo);
  auto response = transport_->Send(request, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->bytes_sent, payload.size());
  EXPECT_EQ(JsonField(echo, "body_length"), "2000000");
  EXPECT_EQ(JsonField(echo, "body_crc32"), Crc32(payload));
  EXPECT_EQ(JsonField(echo, "chunked"), "false");
  EXPECT_NE(echo.find("\"method\": \"PUT\""), std::string::npos) << echo;
  EXPECT_TRUE(EchoHasHeader(echo, "content-length")) << echo;
  // curl must not invent a Content-Type or wait for 100 Continue.
  EXPECT_FALSE(EchoHasHeader(echo, "content-type")) << echo;
  EXPECT_FALSE(EchoHasHeader(echo, "expect")) << echo;
}

TEST_F(CurlTransportTest, CallerHeadersAreSent) {
  HttpRequest request;
  request.method = "POST";
  request.url = Url("/echo");
  request.body = "{}";
  request.headers.Add("Content-Type", "application/json");
  request.headers.Add("X-Custom-Thing", "abc");
  std::string echo;
  StringSink sink(&echo);
  auto response = transport_->Send(request, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_NE(echo.find("[\"Content-Type\", \"application/json\"]"), std::string::npos) << echo;
  EXPECT_NE(echo.find("[\"X-Custom-Thing\", \"abc\"]"), std::string::npos) << echo;
  EXPECT_NE(echo.find("\"method\": \"POST\""), std::string::npos) << echo;
}

TEST_F(CurlTransportTest, EmptyPostAndDeleteUseTheirMethods) {
  HttpRequest post;
  post.method = "POST";
  post.url = Url("/echo?uploads");
  std::string echo;
  StringSink sink(&echo);
  auto response = transport_->Send(post, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_NE(echo.find("\"method\": \"POST\""), std::string::npos) << echo;
  EXPECT_NE(echo.find("[\"Content-Length\", \"0\"]"), std::string::npos) << echo;
  EXPECT_EQ(JsonField(echo, "body_length"), "0");

  HttpRequest del;
  del.method = "DELETE";
  del.url = Url("/echo");
  echo.clear();
  response = transport_->Send(del, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_NE(echo.find("\"method\": \"DELETE\""), std::string::npos) << echo;
  EXPECT_EQ(JsonField(echo, "body_length"), "0");

  // A GET after a DELETE on the same pooled handle is a GET again.
  echo.clear();
  ASSERT_TRUE(Get("/echo", &sink).ok());
  EXPECT_NE(echo.find("\"method\": \"GET\""), std::string::npos) << echo;
}

TEST_F(CurlTransportTest, PostFromSourceWithKnownSize) {
  PatternSource source(1'234'567);
  HttpRequest request;
  request.method = "POST";
  request.url = Url("/echo");
  request.body_source = &source;
  request.body_size = 1'234'567;
  std::string echo;
  StringSink sink(&echo);
  auto response = transport_->Send(request, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->bytes_sent, 1'234'567u);
  EXPECT_EQ(JsonField(echo, "body_length"), "1234567");
  EXPECT_EQ(JsonField(echo, "body_crc32"), Crc32(source.data()));
  EXPECT_EQ(JsonField(echo, "chunked"), "false");
  EXPECT_FALSE(EchoHasHeader(echo, "content-type")) << echo;
}

TEST_F(CurlTransportTest, PutFromSourceOfUnknownSizeIsChunked) {
  PatternSource source(777'777);
  HttpRequest request;
  request.method = "PUT";
  request.url = Url("/echo");
  request.body_source = &source;
  request.body_size = -1;
  std::string echo;
  StringSink sink(&echo);
  auto response = transport_->Send(request, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->bytes_sent, 777'777u);
  EXPECT_EQ(JsonField(echo, "chunked"), "true");
  EXPECT_EQ(JsonField(echo, "body_length"), "777777");
  EXPECT_EQ(JsonField(echo, "body_crc32"), Crc32(source.data()));
  EXPECT_FALSE(EchoHasHeader(echo, "expect")) << echo;
}

TEST_F(CurlTransportTest, SourceErrorAbortsTheUploadAndIsReturned) {
  PatternSource source(1'000'000);
  source.fail_at_read = 3;
  HttpRequest request;
  request.method = "PUT";
  request.url = Url("/echo");
  request.body_source = &source;
  request.body_size = 1'000'000;
  auto response = transport_->Send(request, nullptr);
  EXPECT_EQ(response.status().code(), StatusCode::kDataLoss) << response.status().ToString();
  EXPECT_EQ(response.status().message(), "disk went away");
}

TEST_F(CurlTransportTest, SourceShorterThanAnnouncedIsDataLoss) {
  PatternSource source(1000);
  HttpRequest request;
  request.method = "PUT";
  request.url = Url("/echo");
  request.body_source = &source;
  request.body_size = 5000;
  auto response = transport_->Send(request, nullptr);
  EXPECT_EQ(response.status().code(), StatusCode::kDataLoss) << response.status().ToString();
  EXPECT_NE(response.status().message().find("1000 of the 5000"), std::string::npos)
      << response.status().message();
  EXPECT_NE(response.status().message().find("PUT http://127.0.0.1:"), std::string::npos)
      << response.status().message();
}

TEST_F(CurlTransportTest, NonSuccessIsAResponseWithItsErrorBody) {
  RecordingSink sink;
  auto response = Get("/status?code=503", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 503);
  EXPECT_FALSE(response->ok());
  EXPECT_EQ(response->error_body, "status 503");
  EXPECT_EQ(response->headers.Get("x-error-code"), "Test503");
  // The sink only ever sees 2xx bodies.
  EXPECT_EQ(sink.header_calls, 0);
  EXPECT_EQ(sink.writes, 0);

  response = Get("/status?code=404", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(response->error_body, "status 404");
}

TEST_F(CurlTransportTest, ErrorBodyIsTruncatedAt64KiB) {
  auto response = Get("/status?code=500&n=200000", nullptr);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 500);
  EXPECT_EQ(response->error_body, PatternContent(64 * 1024));
  EXPECT_EQ(response->bytes_received, 0u);  // nothing went to a sink
  // The rest was read and dropped, so the connection stays usable.
  std::string body;
  StringSink sink(&body);
  ASSERT_TRUE(Get("/bytes?n=10", &sink).ok());
  EXPECT_EQ(body, PatternContent(10));
}

// Object keys may hold "." and ".." segments ("a/./b" is an S3 key of its
// own): the path goes out as written, never resolved.
TEST_F(CurlTransportTest, PathsAreSentAsWritten) {
  RecordingSink sink;
  auto response = Get("/x/./../echo", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 404) << "the server saw /echo: the path was resolved";
  EXPECT_EQ(response->error_body, "no such endpoint: /x/./../echo");
}

TEST_F(CurlTransportTest, ResponseHeadersIgnoreCase) {
  auto response = Get("/headers?X-Mixed-Case=Value1&etag=%22abc%22", nullptr);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->headers.Get("x-mixed-case"), "Value1");
  EXPECT_EQ(response->headers.Get("X-MIXED-CASE"), "Value1");
  EXPECT_EQ(response->headers.Get("ETag"), "\"abc\"");
}

TEST_F(CurlTransportTest, OnlyTheFinalResponsesHeadersAreKept) {
  std::string body;
  StringSink sink(&body);
  auto response = Get("/continue", &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->headers.Get("X-Final"), "yes");
  EXPECT_FALSE(response->headers.Has("X-Interim"));
  EXPECT_EQ(body, "final");
}

TEST_F(CurlTransportTest, SequentialRequestsReuseTheConnection) {
  const int before = ServerConnections();
  for (int i = 0; i < 100; ++i) {
    std::string body;
    StringSink sink(&body);
    auto response = Get("/bytes?n=1000", &sink);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    ASSERT_EQ(body.size(), 1000u);
  }
  const int after = ServerConnections();
  // One connection serves them all (two if the first probe opened one).
  EXPECT_LE(after - before, 2) << "100 requests opened " << after - before << " connections";
}

// Sockets open in this process (the client's and the in-process server's).
int OpenSockets() {
  int sockets = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const auto target = std::filesystem::read_symlink(entry.path(), error);
    if (!error && target.string().rfind("socket:", 0) == 0) ++sockets;
  }
  return sockets;
}

TEST_F(CurlTransportTest, ATransportClosesItsConnectionsWhenDestroyed) {
  // The transport closes its sockets itself (it tracks them for the quick
  // ACK): none may outlive it. The server closes its end when the client's
  // does, so the count returns to where it was.
  const int before = OpenSockets();
  {
    std::shared_ptr<HttpTransport> transport = MakeCurlTransport(HttpOptions{});
    std::vector<std::thread> senders;
    for (int i = 0; i < 4; ++i) {
      senders.emplace_back([&] {
        HttpRequest request;
        request.url = Url("/bytes?n=1000");
        std::string body;
        StringSink sink(&body);
        EXPECT_TRUE(transport->Send(request, &sink).ok());
      });
    }
    for (auto& sender : senders) sender.join();
    EXPECT_GT(OpenSockets(), before);
  }
  for (int i = 0; i < 500 && OpenSockets() > before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(OpenSockets(), before);
}

TEST_F(CurlTransportTest, AConnectionTheServerDroppedIsReplacedQuietly) {
  ASSERT_TRUE(Get("/bytes?n=10&drop=1", nullptr).ok());
  // The pooled handle's connection is dead now; the upload still goes through.
  PatternSource source(100000);
  HttpRequest request;
  request.method = "PUT";
  request.url = Url("/echo");
  request.body_source = &source;
  request.body_size = 100000;
  std::string echo;
  StringSink sink(&echo);
  auto response = transport_->Send(request, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(JsonField(echo, "body_crc32"), Crc32(source.data()));
  EXPECT_EQ(response->bytes_sent, 100000u);
}

TEST_F(CurlTransportTest, EightThreadsSendAtOnce) {
  const int before = ServerConnections();
  constexpr int kThreads = 8, kRequestsPerThread = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRequestsPerThread; ++i) {
        const size_t size = 1000 * (t + 1) + i;
        if (i % 2 == 0) {
          std::string body;
          StringSink sink(&body);
          auto response = Get("/bytes?n=" + std::to_string(size), &sink);
          if (!response.ok() || body != PatternContent(size)) ++failures;
        } else {
          const std::string payload = PatternContent(size);
          HttpRequest request;
          request.method = "PUT";
          request.url = Url("/echo");
          request.body = payload;
          std::string echo;
          StringSink sink(&echo);
          auto response = transport_->Send(request, &sink);
          if (!response.ok() || JsonField(echo, "body_crc32") != Crc32(payload)) ++failures;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  // At most one connection per concurrent request, however many requests.
  const int after = ServerConnections();
  EXPECT_LE(after - before, kThreads + 1);
}

TEST_F(CurlTransportTest, StalledTransferIsDeadlineExceeded) {
  // curl averages the speed over the last few seconds, so the limit sits
  // well above what the first burst of 100 bytes makes of that average.
  HttpOptions options;
  options.low_speed_bytes = 1000;
  options.low_speed_time = std::chrono::seconds(1);
  auto transport = MakeCurlTransport(options);
  HttpRequest request;
  request.url = Url("/stall?after=100&seconds=20&X-Amz-Signature=topsecretsig");
  std::string body;
  StringSink sink(&body);
  auto response = transport->Send(request, &sink);
  ASSERT_EQ(response.status().code(), StatusCode::kDeadlineExceeded)
      << response.status().ToString();
  const std::string& message = response.status().message();
  EXPECT_NE(message.find("stalled"), std::string::npos) << message;
  EXPECT_NE(message.find("GET http://127.0.0.1:"), std::string::npos) << message;
  EXPECT_NE(message.find("/stall"), std::string::npos) << message;
  EXPECT_EQ(message.find("topsecretsig"), std::string::npos) << message;
  EXPECT_EQ(body, PatternContent(100));
}

TEST_F(CurlTransportTest, TotalTimeoutIsDeadlineExceeded) {
  HttpRequest request;
  request.url = Url("/stall?after=10&seconds=20");
  request.total_timeout = std::chrono::milliseconds(300);
  auto response = transport_->Send(request, nullptr);
  ASSERT_EQ(response.status().code(), StatusCode::kDeadlineExceeded)
      << response.status().ToString();
  EXPECT_NE(response.status().message().find("300 ms timeout"), std::string::npos)
      << response.status().message();
}

TEST_F(CurlTransportTest, ACancelledTokenSendsNothing) {
  const int before = ServerConnections();
  CancelSource source;
  source.Cancel();
  {
    CancelScope scope(source.token());
    auto response = Get("/bytes?n=10", nullptr);
    ASSERT_EQ(response.status().code(), StatusCode::kCancelled) << response.status().ToString();
    EXPECT_NE(response.status().message().find("GET http://127.0.0.1:"), std::string::npos);
  }
  // Only the two /connections requests reached the server, on one connection.
  EXPECT_EQ(ServerConnections(), before);
}

TEST_F(CurlTransportTest, ACancelAbortsATransferInFlight) {
  // The server sends 100 bytes and then nothing for 20 s: without the
  // cancel this ends in the stall or the server's hang-up, not Cancelled.
  CancelSource source;
  class CancelAfterFirstBytes : public ResponseSink {
   public:
    explicit CancelAfterFirstBytes(CancelSource& source) : source_(source) {}
    Status Write(std::string_view data) override {
      received += data.size();
      source_.Cancel();  // as an owner on another thread would
      return OkStatus();
    }
    size_t received = 0;

   private:
    CancelSource& source_;
  } sink(source);
  CancelScope scope(source.token());
  HttpRequest request;
  request.url = Url("/stall?after=100&seconds=20");
  auto response = transport_->Send(request, &sink);
  ASSERT_EQ(response.status().code(), StatusCode::kCancelled) << response.status().ToString();
  EXPECT_NE(response.status().message().find("/stall"), std::string::npos);
  EXPECT_EQ(sink.received, 100u);
}

TEST_F(CurlTransportTest, ADeadlineAbortsATransferInFlight) {
  CancelSource source;
  source.CancelAt(std::chrono::steady_clock::now() + std::chrono::milliseconds(300));
  CancelScope scope(source.token());
  HttpRequest request;
  request.url = Url("/stall?after=10&seconds=20");
  auto response = transport_->Send(request, nullptr);
  ASSERT_EQ(response.status().code(), StatusCode::kCancelled) << response.status().ToString();
}

TEST_F(CurlTransportTest, ResetMidBodyIsUnavailable) {
  std::string body;
  StringSink sink(&body);
  auto response = Get("/reset?after=5000", &sink);
  ASSERT_EQ(response.status().code(), StatusCode::kUnavailable) << response.status().ToString();
  EXPECT_NE(response.status().message().find("GET http://127.0.0.1:"), std::string::npos);
  EXPECT_LE(body.size(), 5000u);
}

TEST_F(CurlTransportTest, ConnectionRefusedIsUnavailable) {
  // A port that was free a moment ago and has no listener now.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  close(fd);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) +
                          "/k?X-Amz-Credential=AKIDEXAMPLE&X-Amz-Signature=topsecretsig";

  HttpRequest request;
  request.method = "PUT";
  request.url = url;
  request.body = "data";
  auto response = transport_->Send(request, nullptr);
  ASSERT_EQ(response.status().code(), StatusCode::kUnavailable) << response.status().ToString();
  const std::string& message = response.status().message();
  EXPECT_NE(message.find("PUT http://127.0.0.1:"), std::string::npos) << message;
  EXPECT_NE(message.find("could not connect"), std::string::npos) << message;
  EXPECT_EQ(message.find("topsecretsig"), std::string::npos) << message;
  EXPECT_EQ(message.find("AKIDEXAMPLE"), std::string::npos) << message;
}

TEST_F(CurlTransportTest, SinkErrorAbortsTheTransferAndIsReturned) {
  RecordingSink sink;
  sink.fail_at_write = 1;
  auto response = Get("/bytes?n=50000000", &sink);
  EXPECT_EQ(response.status().code(), StatusCode::kCancelled) << response.status().ToString();
  EXPECT_EQ(response.status().message(), "sink gave up");
  EXPECT_EQ(sink.writes, 1);
  EXPECT_LT(sink.body.size(), 50'000'000u);
}

TEST_F(CurlTransportTest, OnHeadersErrorAbortsTheTransfer) {
  RecordingSink sink;
  sink.headers_error = FailedPreconditionError("object changed");
  auto response = Get("/bytes?n=100000", &sink);
  EXPECT_EQ(response.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(sink.writes, 0);

  RecordingSink empty_sink;
  empty_sink.headers_error = FailedPreconditionError("object changed");
  response = Get("/bytes?n=0", &empty_sink);
  EXPECT_EQ(response.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(CurlTransportTest, MalformedUrlIsInvalidArgument) {
  HttpRequest request;
  request.url = "ftp://127.0.0.1/file";
  auto response = transport_->Send(request, nullptr);
  EXPECT_EQ(response.status().code(), StatusCode::kInvalidArgument) << response.status().ToString();
}

}  // namespace
}  // namespace spool
