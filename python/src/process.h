// Fork safety for the binding objects.
//
// torch.utils.data.DataLoader workers (and multiprocessing) fork. A forked
// child inherits the parent's memory but none of its threads, and shares its
// sockets: spool's thread pool, byte budget and the stores' connection pools
// created before the fork must never be used in the child (a task queued
// there would wait for a worker that does not exist; a request would write
// into a TLS stream the parent is using).
//
// So the bindings never let spool pick its process-wide defaults. Every store,
// transfer and manager they open gets CurrentResources(): in the process that
// imported spool, spool's own defaults; in a forked child, an executor and a
// byte budget made for that child on first use. Since the store registry
// keys stores by executor and budget, a child never receives a store the
// parent opened.
//
// An object opened before the fork (a reader, writer, manager) remembers its
// process (ProcessOwner). In a child it is never used nor destroyed there:
// readers reopen their object with the child's resources, everything else
// fails with FailedPrecondition, and Abandon() leaks what the parent owns
// rather than tear down connections or tasks that belong to the parent.
//
// Threading: call with the GIL held (the fork happens while the forking
// thread holds it, so no other thread is inside these functions then).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>

#include "spool/core/executor.h"
#include "spool/core/storage/registry.h"

namespace spool::python {

struct ProcessResources {
  Executor* executor = nullptr;  // null: spool's DefaultExecutor()
  ByteBudget* budget = nullptr;  // null: spool's DefaultByteBudget()
  StoreOptions store_options;    // with the executor and budget above
};

// This process's resources (see above). The pointers live until exit.
const ProcessResources& CurrentResources();

// OpenLocation(url) with this process's store options; releases the GIL
// while the store opens. Call with the GIL held.
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
