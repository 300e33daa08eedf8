#include "spool/core/bytes.h"

#include <array>
#include <cctype>
#include <cstdio>

#include "spool/core/strings.h"

namespace spool {
namespace {

Status BadSize(std::string_view text, std::string_view why) {
  return InvalidArgumentError("invalid byte size \"" + std::string(text) + "\": " + std::string(why) +
                              " (examples: 4096, 64KiB, 256MiB, 1.5GB)");
}

// The multiplier of a unit suffix, 0 if it is not one.
uint64_t UnitMultiplier(std::string_view unit) {
  struct Unit {
    char letter;
    uint64_t multiplier;
  };
  static constexpr std::array<Unit, 4> kUnits = {{{'k', kKiB}, {'m', kMiB}, {'g', kGiB}, {'t', 1024 * kGiB}}};
  if (unit.empty() || EqualsIgnoreCase(unit, "b")) return 1;
  for (const Unit& u : kUnits) {
    std::string_view letter(&u.letter, 1);
    if (EqualsIgnoreCase(unit.substr(0, 1), letter) &&
        (unit.size() == 1 || EqualsIgnoreCase(unit.substr(1), "b") || EqualsIgnoreCase(unit.substr(1), "ib"))) {
      return u.multiplier;
    }
  }
  return 0;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  std::string_view s = Trim(text);
  // The number: digits, optionally '.' and more digits, kept as an integer
  // mantissa and a power of ten so that "1.5GiB" is exact.
  unsigned __int128 mantissa = 0;
  unsigned __int128 divisor = 1;
  size_t i = 0;
  size_t digits = 0;
  bool seen_point = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (++digits > 24) return BadSize(text, "too many digits");
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (seen_point) divisor *= 10;
  }
  if (digits == 0) return BadSize(text, "it does not start with a number");
  uint64_t multiplier = UnitMultiplier(Trim(s.substr(i)));
  if (multiplier == 0) return BadSize(text, "unknown unit (use B, KiB, MiB, GiB or TiB)");
  unsigned __int128 bytes = mantissa * multiplier / divisor;  // rounds down to whole bytes
  if (bytes > UINT64_MAX) return BadSize(text, "too large");
  return static_cast<uint64_t>(bytes);
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < kKiB) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  // Move up a unit also when rounding to one decimal would print "1024.0".
  while (value >= 1023.95 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f %s", value, kUnits[unit]);
  return buffer;
}

}  // namespace spool
