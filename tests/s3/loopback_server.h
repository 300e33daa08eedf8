// Starts one of the Python stand-in servers of tests/s3/servers on
// 127.0.0.1, reads the port it prints, and kills exactly that process (by
// its pid) when destroyed.
#pragma once

#include <string>
#include <vector>

namespace spool::s3::testing {

class LoopbackServer {
 public:
  // `script` is a file name under tests/s3/servers; `arguments` follow it.
  LoopbackServer(const std::string& script, const std::vector<std::string>& arguments);
  ~LoopbackServer();
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  int port() const { return port_; }  // 0 when the server did not start
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int pid_ = -1;
  int port_ = 0;
};

}  // namespace spool::s3::testing
