#include "spool/core/key_fanout.h"

namespace spool {

std::string FanoutLabel(uint64_t index, int fanout) {
  if (fanout <= 1) return "";
  int width = 2;
  while ((uint64_t{1} << (4 * width)) < static_cast<uint64_t>(fanout)) ++width;
  const uint64_t mask = (uint64_t{1} << (4 * width)) - 1;
  // Any odd multiplier permutes 0..mask: distinct buckets, distinct labels.
  const uint64_t label = ((index % static_cast<uint64_t>(fanout)) * 0x9E3779B97F4A7C15ull) & mask;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text(static_cast<size_t>(width), '0');
  for (int i = 0; i < width; ++i) text[static_cast<size_t>(i)] = kHex[(label >> (4 * (width - 1 - i))) & 15];
  return text;
}

}  // namespace spool
