// TLS settings of the libcurl transport, against the test server speaking
// HTTPS with a self-signed certificate for 127.0.0.1.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "spool/core/env.h"
#include "spool/core/http/transport.h"
#include "tests/http/http_test_server.h"

namespace spool {
namespace {

using spool::testing::HttpTestServer;
using spool::testing::PatternContent;

class CurlTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string dir = ::testing::TempDir() + "/spool_http_tls";
    std::filesystem::create_directories(dir);
    server_ = HttpTestServer::StartTls(dir).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr); }

  static Result<std::string> Fetch(const HttpOptions& options, size_t size) {
    auto transport = MakeCurlTransport(options);
    HttpRequest request;
    request.url = server_->Url("/bytes?n=" + std::to_string(size));
    std::string body;
    StringSink sink(&body);
    auto response = transport->Send(request, &sink);
    if (!response.ok()) return response.status();
    EXPECT_EQ(response->status, 200);
    return body;
  }

  static HttpTestServer* server_;
};

HttpTestServer* CurlTlsTest::server_ = nullptr;

TEST_F(CurlTlsTest, UntrustedCertificateIsUnavailableAndSaysWhatToDo) {
  auto body = Fetch(HttpOptions{}, 10);
  ASSERT_EQ(body.status().code(), StatusCode::kUnavailable) << body.status().ToString();
  const std::string& message = body.status().message();
  EXPECT_NE(message.find("GET https://127.0.0.1:"), std::string::npos) << message;
  EXPECT_NE(message.find("not trusted"), std::string::npos) << message;
  EXPECT_NE(message.find("--ca-bundle"), std::string::npos) << message;
}

TEST_F(CurlTlsTest, CaBundleOptionTrustsTheServer) {
  HttpOptions options;
  options.ca_bundle = server_->CaBundle();
  auto body = Fetch(options, 100000);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, PatternContent(100000));
}

// Responses and an upload of many TLS records each arrive whole, in order,
// and in time. Guards the TLS read path: with OpenSSL's read-ahead turned
// on (tried to save recv calls), libcurl 7.88 polls the socket while whole
// records already sit undecrypted in OpenSSL's buffer, and this test's
// downloads stall until the low-speed timeout.
TEST_F(CurlTlsTest, LargeBodiesCrossManyRecordsIntact) {
  HttpOptions options;
  options.ca_bundle = server_->CaBundle();
  auto transport = MakeCurlTransport(options);
  for (size_t size : {size_t{3} << 20, (size_t{1} << 20) + 17}) {
    HttpRequest request;
    request.url = server_->Url("/bytes?n=" + std::to_string(size));
    std::string body;
    StringSink sink(&body);
    auto response = transport->Send(request, &sink);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->status, 200);
    EXPECT_TRUE(body == PatternContent(size)) << "the body of " << size << " bytes differs";
  }
  HttpRequest echo;
  echo.method = "PUT";
  echo.url = server_->Url("/echo?raw=1");
  const std::string sent = PatternContent((size_t{2} << 20) + 5);
  echo.body = sent;
  std::string back;
  StringSink sink(&back);
  auto response = transport->Send(echo, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(back == sent) << "the echoed body differs";
}

TEST_F(CurlTlsTest, SslCertFileFromTheEnvironmentIsHonoured) {
  // No CURL_CA_BUNDLE: it would come first.
  ScopedEnvOverride env(Env::Fixed({{"SSL_CERT_FILE", server_->CaBundle()}}));
  auto body = Fetch(HttpOptions{}, 10);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, PatternContent(10));
}

TEST_F(CurlTlsTest, CurlCaBundleFromTheEnvironmentIsHonoured) {
  ScopedEnvOverride env(
      Env::Fixed({{"CURL_CA_BUNDLE", server_->CaBundle()}, {"SSL_CERT_FILE", "/nonexistent/ignored.pem"}}));
  auto body = Fetch(HttpOptions{}, 10);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
}

TEST_F(CurlTlsTest, CaBundleOptionWinsOverTheEnvironment) {
  ScopedEnvOverride env(Env::Fixed({{"CURL_CA_BUNDLE", "/nonexistent/ignored.pem"}}));
  HttpOptions options;
  options.ca_bundle = server_->CaBundle();
  auto body = Fetch(options, 10);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
}

TEST_F(CurlTlsTest, VerificationCanBeTurnedOff) {
  HttpOptions options;
  options.verify_tls = false;
  auto body = Fetch(options, 10);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, PatternContent(10));
}

TEST_F(CurlTlsTest, UnreadableCaBundleIsInvalidArgumentNamingTheFile) {
  HttpOptions options;
  options.ca_bundle = "/nonexistent/spool-ca.pem";
  auto body = Fetch(options, 10);
  ASSERT_EQ(body.status().code(), StatusCode::kInvalidArgument) << body.status().ToString();
  EXPECT_NE(body.status().message().find("/nonexistent/spool-ca.pem"), std::string::npos)
      << body.status().message();
}

}  // namespace
}  // namespace spool
