#include "tests/support/env.h"

#include <stdlib.h>

namespace spool::test_support {
namespace {

void Assign(const std::string& name, const std::optional<std::string>& value) {
  if (value) {
    ::setenv(name.c_str(), value->c_str(), 1);
  } else {
    ::unsetenv(name.c_str());
  }
}

}  // namespace

std::string GetEnv(const char* name, std::string fallback) {
  const char* value = ::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

ScopedEnv::ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
  if (const char* previous = ::getenv(name_.c_str())) previous_ = previous;
  Assign(name_, value);
}

ScopedEnv::~ScopedEnv() { Assign(name_, previous_); }

}  // namespace spool::test_support
