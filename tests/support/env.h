// Reading the test harness's settings (server addresses, the backend under
// test, buckets) from the process environment. To change what the library
// sees, tests install a spool::ScopedEnvOverride (spool/core/env.h) instead
// of setting process variables under the threads that read them.
#pragma once

#include <string>

namespace spool::test_support {

// The variable's value, or `fallback` when it is unset or empty.
std::string GetEnv(const char* name, std::string fallback = "");

}  // namespace spool::test_support
