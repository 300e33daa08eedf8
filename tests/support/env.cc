#include "tests/support/env.h"

#include <stdlib.h>

namespace spool::test_support {

std::string GetEnv(const char* name, std::string fallback) {
  const char* value = ::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

}  // namespace spool::test_support
