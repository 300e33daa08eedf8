#include "tests/faults/fault_proxy.h"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace spool::testing {
namespace {

// The one number after `"name":` in a small flat JSON object.
int JsonInt(const std::string& json, const std::string& name) {
  const size_t at = json.find("\"" + name + "\"");
  if (at == std::string::npos) return 0;
  const size_t colon = json.find(':', at);
  return colon == std::string::npos ? 0 : std::atoi(json.c_str() + colon + 1);
}

int CountOccurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

}  // namespace

std::unique_ptr<FaultProxy> FaultProxy::Start(const std::string& upstream) {
  const test_support::TempDir dir("spool-fault-proxy");
  if (dir.path().empty()) return nullptr;
  const std::string state_file = (dir / "proxy.json").string();
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[0], STDIN_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  std::string python = SPOOL_PYTHON, script = SPOOL_FAULT_PROXY_SCRIPT;
  std::vector<std::string> args = {python, script, "--upstream", upstream, "--state-file", state_file,
                                   "--exit-on-stdin-eof"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[0]);
  if (spawned != 0) {
    ::close(pipe_fds[1]);
    ADD_FAILURE() << "cannot start " << python << " " << script;
    return nullptr;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(state_file)) {
    int wstatus = 0;
    if (::waitpid(pid, &wstatus, WNOHANG) == pid || std::chrono::steady_clock::now() > deadline) {
      ::close(pipe_fds[1]);
      ADD_FAILURE() << "the fault proxy did not start (" << script << ")";
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string state = test_support::ReadFile(state_file);
  return std::unique_ptr<FaultProxy>(
      new FaultProxy(pid, pipe_fds[1], JsonInt(state, "port"), JsonInt(state, "control_port")));
}

FaultProxy::FaultProxy(pid_t pid, int stdin_fd, int port, int control_port)
    : pid_(pid), stdin_fd_(stdin_fd), port_(port), control_port_(control_port) {
  HttpOptions options;
  options.connect_timeout = std::chrono::seconds(5);
  options.total_timeout = std::chrono::seconds(30);
  transport_ = MakeCurlTransport(options);
}

FaultProxy::~FaultProxy() {
  ::close(stdin_fd_);  // the proxy exits at the end of its stdin
  int wstatus = 0;
  ::waitpid(pid_, &wstatus, 0);
}

std::string FaultProxy::Control(const std::string& method, const std::string& path, std::string_view body) {
  HttpRequest request;
  request.method = method;
  request.url = "http://127.0.0.1:" + std::to_string(control_port_) + path;
  request.body = body;
  if (!body.empty()) request.headers.Set("Content-Type", "application/json");
  std::string answer;
  StringSink sink(&answer);
  auto response = transport_->Send(request, &sink);
  EXPECT_TRUE(response.ok()) << "fault proxy control " << method << " " << path << ": "
                             << response.status().ToString();
  if (!response.ok()) return "";
  EXPECT_TRUE(response->ok()) << "fault proxy control " << method << " " << path << " " << body << ": HTTP "
                              << response->status << " " << response->error_body;
  return answer;
}

void FaultProxy::Arm(std::string_view rules_json) { Control("POST", "/rules", rules_json); }
void FaultProxy::Clear() { Control("DELETE", "/rules", ""); }
std::string FaultProxy::Log() { return Control("GET", "/log", ""); }
void FaultProxy::ClearLog() { Control("DELETE", "/log", ""); }
int FaultProxy::FaultsApplied() {
  const std::string log = Log();
  return CountOccurrences(log, "\"fault\": \"");
}

}  // namespace spool::testing
