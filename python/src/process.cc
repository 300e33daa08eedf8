#include "process.h"

#include <unistd.h>

#include "bindings.h"

namespace spool::python {

StoreLocation OpenUrl(const std::string& url) {
  pybind11::gil_scoped_release release;
  return Unwrap(OpenLocation(url));
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
