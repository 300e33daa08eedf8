// Case-insensitive comparison and lower-casing of ASCII text: HTTP header
// names, URL schemes, unit suffixes, option values. Only 'A'-'Z' and 'a'-'z'
// are folded; every other byte (digits, punctuation, UTF-8 sequences)
// compares as itself. Unlike std::tolower, the result never depends on the
// process's locale, and no byte value is undefined behaviour.
#pragma once

#include <string>
#include <string_view>

namespace spool {

// 'A'-'Z' become 'a'-'z'; any other byte is returned unchanged.
constexpr char AsciiToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// A copy of `text` with 'A'-'Z' lower-cased.
std::string AsciiToLower(std::string_view text);

// True when `a` and `b` have the same length and differ at most in the case
// of ASCII letters ("Content-Length" equals "content-length").
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace spool
