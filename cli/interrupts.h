// Ctrl-C and SIGTERM for the spool command.
//
// While an Interrupts object lives, SIGINT and SIGTERM cancel its token
// instead of killing the process: the command's requests stop within about
// a second, its writers abort their uploads, downloads remove their partial
// files, and the command returns a Cancelled status that main turns into one
// line and exit code 128 + signal (130, 143). A second signal exits at once
// with that code, cleaning nothing up.
//
// The handler only writes the signal number to a pipe; a thread of this
// object reads it and cancels (Cancel() is not async-signal-safe). Both
// signals are blocked in every other thread (the constructor blocks them in
// the calling thread, and threads started afterwards inherit that), so the
// kernel always hands them to the watcher: a main thread in a long write()
// cannot delay a Ctrl-C. Construct it before any other thread starts. The
// destructor stops the watcher, restores the default handlers and the mask.
// Child processes must be started with an empty signal mask (a mask
// survives exec).
#pragma once

#include <signal.h>

#include <atomic>
#include <thread>

#include "spool/core/cancel.h"

namespace spool::cli {

class Interrupts {
 public:
  Interrupts();
  ~Interrupts();
  Interrupts(const Interrupts&) = delete;
  Interrupts& operator=(const Interrupts&) = delete;

  CancelToken token() const { return source_.token(); }
  // The first signal received; 0 when none came.
  int signal() const { return signal_.load(); }

 private:
  void Watch();

  CancelSource source_;
  std::atomic<int> signal_{0};
  int pipe_[2] = {-1, -1};
  sigset_t previous_mask_;
  std::thread watcher_;
};

// "SIGINT", "SIGTERM", ...
const char* SignalName(int signal_number);

}  // namespace spool::cli
