// FaultProxy: runs tests/faults/fault_proxy.py (a loopback HTTP proxy that
// injects faults) in front of a server for one test binary, and scripts it.
//
//   auto proxy = FaultProxy::Start("127.0.0.1:47480");
//   store_options.endpoint_url = proxy->url();
//   proxy->Arm(R"({"kind": "status", "status": 503, "code": "SlowDown", "count": 2})");
//
// The rule language is documented at the top of fault_proxy.py. The proxy
// process reads its stdin and exits when it closes, so it never outlives the
// test binary, even one that crashes. Errors fail the calling test (gtest).
// Thread-safe after Start.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "spool/core/http/transport.h"

namespace spool::testing {

class FaultProxy {
 public:
  // Starts a proxy to `upstream` ("127.0.0.1:port"); null (and a test
  // failure) when it does not come up.
  static std::unique_ptr<FaultProxy> Start(const std::string& upstream);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // "http://127.0.0.1:<port>": the endpoint to give spool.
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  // Appends rules (a JSON object or array); clears every rule.
  void Arm(std::string_view rules_json);
  void Clear();
  // The request log (JSON array) since the last ClearLog.
  std::string Log();
  void ClearLog();
  // How many logged requests had a fault applied.
  int FaultsApplied();

 private:
  FaultProxy(pid_t pid, int stdin_fd, int port, int control_port);
  std::string Control(const std::string& method, const std::string& path, std::string_view body);

  pid_t pid_;
  int stdin_fd_;
  int port_;
  int control_port_;
  std::shared_ptr<HttpTransport> transport_;
};

}  // namespace spool::testing
