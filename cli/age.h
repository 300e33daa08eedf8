// Ages on the command line ("--older-than 24h"): a number and one unit.
#pragma once

#include <chrono>
#include <string_view>

#include "spool/core/status.h"

namespace spool::cli {

// "90s", "15m", "1h", "7d" -> seconds; InvalidArgument naming `option` and
// showing the accepted forms otherwise.
Result<std::chrono::seconds> ParseAge(std::string_view option, std::string_view text);

}  // namespace spool::cli
