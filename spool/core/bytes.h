// Byte sizes as people write them ("256MiB", "1.5GB", "4096") and as spool
// prints them ("1.5 GiB").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spool/core/status.h"

namespace spool {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// Accepts an integer or decimal number with an optional unit: B, K/KB/KiB,
// M/MB/MiB, G/GB/GiB, T/TB/TiB (case-insensitive; KB and KiB both mean 1024,
// as in the AWS CLI's settings). InvalidArgument names the text otherwise.
Result<uint64_t> ParseByteSize(std::string_view text);

// "0 B", "1023 B", "1.0 KiB", "1.5 GiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace spool
