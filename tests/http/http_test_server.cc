#include "tests/http/http_test_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace spool::testing {
namespace {

// Reads the first line the server prints: its port.
int ReadPort(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return std::atoi(line.c_str());
}

}  // namespace

std::unique_ptr<HttpTestServer> HttpTestServer::Start() { return Launch(""); }

std::unique_ptr<HttpTestServer> HttpTestServer::StartTls(const std::string& certificate_dir) {
  return Launch(certificate_dir);
}

std::unique_ptr<HttpTestServer> HttpTestServer::Launch(const std::string& certificate_dir) {
  int to_server[2], from_server[2];
  if (pipe2(to_server, O_CLOEXEC) != 0 || pipe2(from_server, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe failed";
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_server[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_server[1], STDOUT_FILENO);
  std::vector<const char*> argv = {SPOOL_PYTHON3, SPOOL_HTTP_TEST_SERVER, "--exit-on-stdin-eof"};
  if (!certificate_dir.empty()) {
    argv.push_back("--tls-dir");
    argv.push_back(certificate_dir.c_str());
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  int error =
      posix_spawn(&pid, SPOOL_PYTHON3, &actions, nullptr, const_cast<char**>(argv.data()), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_server[0]);
  close(from_server[1]);
  if (error != 0) {
    ADD_FAILURE() << "could not start " << SPOOL_PYTHON3 << " " << SPOOL_HTTP_TEST_SERVER;
    close(to_server[1]);
    close(from_server[0]);
    return nullptr;
  }
  int port = ReadPort(from_server[0]);
  close(from_server[0]);
  std::unique_ptr<HttpTestServer> server(
      new HttpTestServer(pid, to_server[1], port, certificate_dir));
  if (port <= 0) {
    ADD_FAILURE() << SPOOL_HTTP_TEST_SERVER << " did not print its port";
    return nullptr;
  }
  return server;
}

HttpTestServer::~HttpTestServer() {
  close(stdin_fd_);
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
}

std::string HttpTestServer::Url(std::string_view path_and_query) const {
  const char* scheme = certificate_dir_.empty() ? "http" : "https";
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(port_) +
         std::string(path_and_query);
}

std::string PatternContent(size_t n) {
  std::string content(n, '\0');
  for (size_t i = 0; i < n; ++i) content[i] = static_cast<char>(i % 251);
  return content;
}

}  // namespace spool::testing
