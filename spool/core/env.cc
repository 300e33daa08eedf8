#include "spool/core/env.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace spool {
namespace {

struct OverrideState {
  std::mutex mu;
  std::optional<Env> current;  // guarded by mu
};

// Leaked: threads may still read the environment while statics are destroyed.
OverrideState& State() {
  static auto* state = new OverrideState;
  return *state;
}

// Set by the first override and never cleared: until then CurrentEnv() needs
// no lock, so a process that never overrides (every program outside tests)
// cannot be caught by a fork while another thread holds it.
std::atomic<bool> ever_overridden{false};

}  // namespace

Env Env::Fixed(std::map<std::string, std::string> variables) {
  Env env;
  env.fixed_ =
      std::make_shared<const Map>(std::make_move_iterator(variables.begin()), std::make_move_iterator(variables.end()));
  return env;
}

std::optional<std::string> Env::GetEvenIfEmpty(std::string_view name) const {
  if (fixed_ == nullptr) {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }
  auto it = fixed_->find(name);
  if (it == fixed_->end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Env::Get(std::string_view name) const {
  auto value = GetEvenIfEmpty(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

Env CurrentEnv() {
  if (!ever_overridden.load(std::memory_order_acquire)) return Env();
  OverrideState& state = State();
  std::lock_guard lock(state.mu);
  return state.current.value_or(Env());
}

ScopedEnvOverride::ScopedEnvOverride(Env env) {
  OverrideState& state = State();
  std::lock_guard lock(state.mu);
  previous_ = std::move(state.current);
  state.current = std::move(env);
  ever_overridden.store(true, std::memory_order_release);
}

ScopedEnvOverride::~ScopedEnvOverride() {
  OverrideState& state = State();
  std::lock_guard lock(state.mu);
  state.current = std::move(previous_);
}

}  // namespace spool
