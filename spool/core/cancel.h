// Cancellation: how an owner stops the work it started.
//
// A CancelSource is owned by whatever starts work (a data loader, a writer,
// a checkpoint save, a CLI command); its CancelToken is what the work checks.
// Tokens form a chain: a source made inside the scope of another token is
// cancelled when that one is. Every chain ends at the process token, and
// every token made without a scope descends from the work token, a child of
// the process token. At exit (ShutdownExecutors) the work token is cancelled
// first, so work stops while cleanup under the process token (below) still
// reaches the server for a short grace; then the process token.
//
// The work does not take a token as an argument: a CancelScope installs one
// as the running thread's current token, Executor::Submit carries the
// submitter's current token into the task, and the HTTP transport and the
// retry loop check CancelToken::Current(). So a request made anywhere below
// an owner is abandoned within about a second of the owner's Cancel()
// (libcurl's progress callback), and no retry or backoff follows.
//
// Cleanup that must still reach the server after a cancel (aborting a
// multipart upload) runs under CancelScope(CancelToken::Process()): only
// the end of the exit grace stops it.
//
// Threading: everything here is thread-safe. Cancel() is not
// async-signal-safe (it wakes sleepers); a signal handler should hand the
// signal to a thread (the CLI does, through a pipe).
#pragma once

#include <chrono>
#include <memory>
#include <string_view>

#include "spool/core/status.h"

namespace spool {

namespace cancel_internal {
struct State;
}

class CancelToken {
 public:
  // The work token: cancelled when the process starts to exit.
  CancelToken();
  // The token of the running thread's innermost CancelScope, else the work
  // token.
  static CancelToken Current();
  // Cancelled only at the end of the process's exit grace: for cleanup.
  static CancelToken Process();

  bool cancelled() const;
  // OK, or Cancelled "<what>: cancelled" when the token is cancelled.
  Status Check(std::string_view what) const;
  // Sleeps for `duration` or until cancelled, whichever comes first; false
  // when cancelled.
  bool SleepFor(std::chrono::milliseconds duration) const;

 private:
  friend class CancelSource;
  friend class CancelScope;
  explicit CancelToken(std::shared_ptr<cancel_internal::State> state) : state_(std::move(state)) {}
  std::shared_ptr<cancel_internal::State> state_;
};

class CancelSource {
 public:
  // A source cancelled by Cancel() and whenever `parent` is.
  explicit CancelSource(CancelToken parent = CancelToken::Current());
  CancelSource(const CancelSource&) = delete;
  CancelSource& operator=(const CancelSource&) = delete;

  // Idempotent. Work under the token sees cancelled() from now on.
  void Cancel();
  // Cancelled from `deadline` on (steady clock), unless cancelled before;
  // a later call replaces the deadline.
  void CancelAt(std::chrono::steady_clock::time_point deadline);
  bool cancelled() const { return token().cancelled(); }
  CancelToken token() const { return CancelToken(state_); }

 private:
  std::shared_ptr<cancel_internal::State> state_;
};

// Makes `token` the running thread's current token until destroyed (scopes
// nest; the previous one comes back).
class CancelScope {
 public:
  explicit CancelScope(CancelToken token);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  CancelToken previous_;
};

// The two stages of exit (ShutdownExecutors in executor.h calls them):
// cancel every token but the process token and its cleanup scopes, then
// that one too.
void CancelWork();
void CancelProcess();

}  // namespace spool
