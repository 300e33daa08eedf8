#include "tests/support/bytes.h"

#include <algorithm>
#include <cstring>

namespace spool::test_support {

std::string DeterministicBytes(uint64_t seed, uint64_t size) {
  std::string bytes(size, '\0');
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (uint64_t i = 0; i < size; i += 8) {
    // splitmix64: every output word differs, so a shifted or repeated block
    // cannot compare equal by accident.
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(bytes.data() + i, &z, std::min<uint64_t>(8, size - i));
  }
  return bytes;
}

}  // namespace spool::test_support
