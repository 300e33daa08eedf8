// Starts tests/servers/http_test_server.py on 127.0.0.1 for one test binary.
//
// The server runs as a child process on a free port. It is stopped when the
// HttpTestServer is destroyed, and exits by itself if the test process dies
// (it watches its stdin, a pipe this process holds open). Given a folder,
// it serves HTTPS with a self-signed certificate it writes there.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace spool::testing {

class HttpTestServer {
 public:
  // Returns null (after reporting a test failure) if the server did not start.
  static std::unique_ptr<HttpTestServer> Start();
  static std::unique_ptr<HttpTestServer> StartTls(const std::string& certificate_dir);
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  int port() const { return port_; }
  // "http(s)://127.0.0.1:<port>" + path_and_query.
  std::string Url(std::string_view path_and_query) const;
  // The PEM certificate that makes an HTTPS server trusted.
  std::string CaBundle() const { return certificate_dir_ + "/cert.pem"; }

 private:
  HttpTestServer(pid_t pid, int stdin_fd, int port, std::string certificate_dir)
      : pid_(pid), stdin_fd_(stdin_fd), port_(port), certificate_dir_(std::move(certificate_dir)) {}
  static std::unique_ptr<HttpTestServer> Launch(const std::string& certificate_dir);

  pid_t pid_;
  int stdin_fd_;
  int port_;
  std::string certificate_dir_;  // empty: plain HTTP
};

// The body of /bytes?n=N and /chunked?n=N: byte i is i % 251.
std::string PatternContent(size_t n);

}  // namespace spool::testing
