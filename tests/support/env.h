// Reading and temporarily changing environment variables in tests.
// setenv/getenv are not thread-safe: change the environment only while no
// other thread of the test reads it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace spool::test_support {

// The variable's value, or `fallback` when it is unset or empty.
std::string GetEnv(const char* name, std::string fallback = "");

// Sets (or, given std::nullopt, unsets) a variable for the lifetime of the
// object and restores what it was before on destruction.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value);
  // A null pointer would become a std::string: write std::nullopt to unset.
  ScopedEnv(std::string name, std::nullptr_t) = delete;
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> previous_;
};

}  // namespace spool::test_support
