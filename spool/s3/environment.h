// Reading environment variables through a function, so that configuration
// and credential code can be tested without touching the process
// environment. Thread-safe as long as nobody calls setenv concurrently.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace spool::s3 {

// The value of a variable, or nullopt when it is unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

EnvLookup ProcessEnvironment();
// A fixed set of variables (for tests).
EnvLookup FixedEnvironment(std::map<std::string, std::string> variables);

}  // namespace spool::s3
