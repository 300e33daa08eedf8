// The one way spool reads environment variables.
//
// Every setting spool takes from the environment (credentials, endpoints,
// SPOOL_LOG, SPOOL_THREADS, launcher variables, cache folders, ...) is read
// through an `Env`, so that tests can hand code a set of variables instead of
// changing the process environment under threads that read it.
//
// An Env is a small value, cheap to copy: either the process environment
// (getenv at each read, so later changes are seen) or a fixed map of
// variables. Copies share the map; it is never changed after construction.
//
// How a component gets its Env: it calls `CurrentEnv()` when it reads, and
// hands the result down to the helpers it calls (the S3 credential chain,
// ResolveConfig, ResolveWorker, FindDefaultCredentials take an Env
// parameter, which is also how their unit tests feed them variables).
// CurrentEnv() is the process environment unless a `ScopedEnvOverride` is
// alive. A process-wide default was chosen over an Env field in every
// options struct because most reads happen deep and once (the log level, the
// default pool's size, the CA bundle of a transport, the upload-state folder,
// the launcher's attempt id): threading an Env through every layer to reach
// them would widen a dozen signatures and options for what is, by nature, a
// property of the process.
//
// Threading: reading the process environment is safe from any thread as
// long as nobody calls setenv/putenv/unsetenv meanwhile (POSIX gives no
// more; Python's os.environ assignments call putenv). A fixed Env is
// immutable and safe everywhere. CurrentEnv() and ScopedEnvOverride are
// thread-safe; a process that never installs an override takes no lock.
//
// Lifetime: an Env owns what it reads; one a component stores (a credential
// provider, a cached store) stays valid after the override that produced it
// ends, and keeps answering with that override's variables.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace spool {

class Env {
 public:
  // The process environment.
  Env() = default;
  // Exactly `variables`, nothing of the process environment (for tests).
  static Env Fixed(std::map<std::string, std::string> variables);

  // The value of `name`; nullopt when it is unset or set to the empty
  // string, which counts as unset (as in the AWS and Google SDKs).
  std::optional<std::string> Get(std::string_view name) const;
  // The value of `name`, the empty string included; nullopt only when unset.
  // For settings where an empty value is an error worth reporting.
  std::optional<std::string> GetEvenIfEmpty(std::string_view name) const;

  // True for the process environment.
  bool is_process() const { return fixed_ == nullptr; }

 private:
  using Map = std::map<std::string, std::string, std::less<>>;
  std::shared_ptr<const Map> fixed_;  // null: the process environment
};

// The environment components read: the innermost live ScopedEnvOverride's,
// else the process environment.
Env CurrentEnv();

// Makes CurrentEnv() return `env` for its lifetime, for every thread, and
// restores the previous one on destruction. Overrides nest; destroy them in
// reverse order of creation (a scoped object does). For tests: a value read
// once and kept (the log level, the default pool's size) keeps what the
// first read saw.
class ScopedEnvOverride {
 public:
  explicit ScopedEnvOverride(Env env);
  ~ScopedEnvOverride();
  ScopedEnvOverride(const ScopedEnvOverride&) = delete;
  ScopedEnvOverride& operator=(const ScopedEnvOverride&) = delete;

 private:
  std::optional<Env> previous_;  // nullopt: there was no override
};

}  // namespace spool
