#include "spool/core/strings.h"

#include <algorithm>

namespace spool {

std::string AsciiToLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = AsciiToLower(c);
  return lower;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return AsciiToLower(x) == AsciiToLower(y); });
}

}  // namespace spool
