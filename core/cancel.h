// Cancellation: how an owner stops the work it started.
//
// A CancelSource is owned by whatever starts work (a data loader, a writer,
// a checkpoint save, a CLI command); its CancelToken is what the work checks.
// Tokens form a chain: a source made inside the scope of another token is
// cancelled when that one is, and every chain ends at the process token,
// which is cancelled once, when the process exits (ShutdownExecutors).
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
// process exit stops it.
//
// Threading: everything here is thread-safe. Cancel() is not
// async-signal-safe (it wakes sleepers); a signal handler should hand the
// signal to a thread (the CLI does, through a pipe).
#pragma once

#include <chrono>
#include <memory>
#include <string_view>

#include "core/status.h"

namespace spool {

namespace cancel_internal {
struct State;
}

class CancelToken {
 public:
  // The process token.
  CancelToken();
  // The token of the running thread's innermost CancelScope, else the
  // process token.
  static CancelToken Current();
  // Cancelled only when the process shuts down.
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

// Cancels the process token (see ShutdownExecutors in executor.h, which
// calls it). Exposed for tests.
void CancelProcess();

}  // namespace spool
