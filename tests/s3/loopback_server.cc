#include "tests/s3/loopback_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace spool::s3::testing {

LoopbackServer::LoopbackServer(const std::string& script, const std::vector<std::string>& arguments) {
  int fds[2];
  if (pipe(fds) != 0) return;
  const std::string path = std::string(SPOOL_S3_TEST_SERVERS_DIR) + "/" + script;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv{const_cast<char*>("python3"), const_cast<char*>(path.c_str())};
    for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    execvp("python3", argv.data());
    _exit(127);
  }
  close(fds[1]);
  FILE* out = fdopen(fds[0], "r");
  if (out == nullptr || std::fscanf(out, "%d", &port_) != 1) port_ = 0;
  if (out != nullptr) std::fclose(out);
}

LoopbackServer::~LoopbackServer() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
}

}  // namespace spool::s3::testing
