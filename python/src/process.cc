#include "process.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "bindings.h"
#include "spool/core/bytes.h"

namespace spool::python {
namespace {

// What spool's defaults would be (SPOOL_THREADS / SPOOL_MEMORY_BUDGET), for
// the child's own pool and budget.
int ChildThreadCount() {
  int fallback = std::max(16, 2 * static_cast<int>(std::thread::hardware_concurrency()));
  const char* text = std::getenv("SPOOL_THREADS");
  if (text == nullptr || *text == '\0') return fallback;
  int threads = std::atoi(text);
  return threads >= 1 && threads <= 1024 ? threads : fallback;
}

uint64_t ChildBudgetBytes() {
  constexpr uint64_t kFallback = 512ull << 20;
  const char* text = std::getenv("SPOOL_MEMORY_BUDGET");
  if (text == nullptr || *text == '\0') return kFallback;
  Result<uint64_t> bytes = ParseByteSize(text);
  return bytes.ok() && *bytes > 0 ? *bytes : kFallback;
}

const pid_t import_pid = getpid();

}  // namespace

const ProcessResources& CurrentResources() {
  // Guarded by the GIL. Never freed: stores opened with them may live until exit.
  static pid_t resources_pid = import_pid;
  static ProcessResources* resources = new ProcessResources();
  pid_t pid = getpid();
  if (pid != resources_pid) {
    // A forked child: whatever `resources` pointed at belongs to the parent.
    auto* child = new ProcessResources();
    child->executor = new Executor(ChildThreadCount());
    child->budget = new ByteBudget(ChildBudgetBytes());
    child->store_options.executor = child->executor;
    child->store_options.budget = child->budget;
    resources = child;
    resources_pid = pid;
  }
  return *resources;
}

StoreLocation OpenUrl(const std::string& url) {
  const ProcessResources& resources = CurrentResources();
  pybind11::gil_scoped_release release;
  return Unwrap(OpenLocation(url, resources.store_options));
}

ProcessOwner::ProcessOwner() : pid_(getpid()) {}

bool ProcessOwner::Forked() const { return getpid() != pid_; }

void ProcessOwner::CheckNotForked(const std::string& what) const {
  if (!Forked()) return;
  throw StatusError(FailedPreconditionError(what + " was opened in process " + std::to_string(pid_) +
                                            " before fork(); it cannot be used in the child process " +
                                            std::to_string(getpid()) + ": open it again in this process"));
}

}  // namespace spool::python
