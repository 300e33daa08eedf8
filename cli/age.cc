#include "cli/age.h"

#include <cctype>
#include <cstdint>
#include <string>

namespace spool::cli {

Result<std::chrono::seconds> ParseAge(std::string_view option, std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string_view unit = text.substr(digits);
  if (digits == 0 || digits > 9 || (unit != "s" && unit != "m" && unit != "h" && unit != "d")) {
    return InvalidArgumentError(std::string(option) + " \"" + std::string(text) +
                                "\" should be a number and a unit: 90s, 15m, 1h, 7d");
  }
  int64_t value = std::stoll(std::string(text.substr(0, digits)));
  int64_t scale = unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 86400;
  return std::chrono::seconds(value * scale);
}

}  // namespace spool::cli
