// With SPOOL_LOG=debug the transport logs every exchange, and no secret a
// request carries (Authorization, session tokens, presigned-URL signatures)
// reaches the log.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "spool/core/env.h"
#include "spool/core/http/transport.h"
#include "spool/core/log.h"
#include "tests/http/http_test_server.h"
#include "tests/support/files.h"

namespace spool {
namespace {

// Everything written to file descriptor 2 while it lives.
class StderrCapture {
 public:
  StderrCapture() : path_(::testing::TempDir() + "/http_log_test_stderr") {
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  std::string Finish() {
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    return test_support::ReadFile(path_);
  }

 private:
  std::string path_;
  int saved_;
};

TEST(HttpLogTest, DebugLogNamesTheExchangeButNoSecret) {
  // ctest sets SPOOL_LOG too; this keeps the binary right when run by hand.
  ScopedEnvOverride debug(Env::Fixed({{"SPOOL_LOG", "debug"}}));
  ASSERT_TRUE(log::DebugEnabled());
  auto server = testing::HttpTestServer::Start();
  ASSERT_NE(server, nullptr);
  auto transport = MakeCurlTransport(HttpOptions{});

  HttpRequest request;
  request.url =
      server->Url("/echo?X-Amz-Credential=AKIDQUERYSECRET&X-Amz-Signature=querysignaturesecret");
  request.headers.Add(
      "Authorization",
      "AWS4-HMAC-SHA256 Credential=AKIDHEADERSECRET/20260101/us-east-1/s3/aws4_request, "
      "SignedHeaders=host, Signature=headersignaturesecret");
  request.headers.Add("x-amz-security-token", "sessiontokensecret");
  request.headers.Add("X-Visible", "plainvalue");
  std::string echo;
  StringSink sink(&echo);

  StderrCapture capture;
  auto response = transport->Send(request, &sink);
  HttpRequest refused;
  refused.url = "http://127.0.0.1:1/k?X-Amz-Signature=refusedsignaturesecret";
  auto refused_response = transport->Send(refused, nullptr);
  const std::string log_text = capture.Finish();

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  // The request reached the server with its secrets intact...
  EXPECT_NE(echo.find("sessiontokensecret"), std::string::npos);
  // ...and the log tells what happened without them.
  EXPECT_NE(log_text.find("GET http://127.0.0.1:"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("/echo"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("HTTP 200"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("Authorization"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("plainvalue"), std::string::npos) << log_text;
  for (const char* secret :
       {"AKIDQUERYSECRET", "querysignaturesecret", "AKIDHEADERSECRET", "headersignaturesecret",
        "sessiontokensecret", "refusedsignaturesecret"}) {
    EXPECT_EQ(log_text.find(secret), std::string::npos) << secret << " leaked into:\n" << log_text;
  }
  EXPECT_EQ(refused_response.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(refused_response.status().message().find("refusedsignaturesecret"), std::string::npos);
}

}  // namespace
}  // namespace spool
