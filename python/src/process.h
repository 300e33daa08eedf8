// Fork safety for the binding objects.
//
// torch.utils.data.DataLoader workers (and multiprocessing) fork. A forked
// child inherits the parent's memory but none of its threads, and shares its
// sockets. spool's defaults see to what the child opens itself: its default
// pool and byte budget are made for it on first use, and the store registry
// never hands it a store of the parent (spool/core/executor.h, "Fork").
//
// What remains is an object opened before the fork (a reader, writer,
// manager, loader): it remembers its process (ProcessOwner). In a child it
// is never used nor destroyed there: readers reopen their object in the
// child, everything else fails with FailedPrecondition, and Abandon() leaks
// what the parent owns rather than tear down connections or tasks that
// belong to the parent.
//
// Threading: call with the GIL held.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>

#include "spool/core/storage/registry.h"

namespace spool::python {

// OpenLocation(url); releases the GIL while the store opens. Call with the
// GIL held.
StoreLocation OpenUrl(const std::string& url);

// Which process opened an object.
class ProcessOwner {
 public:
  ProcessOwner();
  // True in a child forked after the object was opened.
  bool Forked() const;
  // FailedPrecondition naming `what` when Forked(): "<what> was opened before
  // fork() ... open it again in this process".
  void CheckNotForked(const std::string& what) const;

 private:
  pid_t pid_;
};

// Leaks `owned` on purpose: what a parent process opened must not be torn
// down by a forked child (its destructor would talk to the parent's
// connections or wait for the parent's threads).
template <typename T>
void Abandon(T owned) {
  new T(std::move(owned));  // NOLINT: deliberately never freed
}

}  // namespace spool::python
