// Test content: bytes that look random, differ at every position and from
// seed to seed, and are the same on every run and in every process (a test
// and the program it starts make the same bytes from the same seed).
#pragma once

#include <cstdint>
#include <string>

namespace spool::test_support {

// `size` bytes of splitmix64 output seeded by `seed`. Not a cryptographic
// generator; fast enough for hundreds of MiB.
std::string DeterministicBytes(uint64_t seed, uint64_t size);

}  // namespace spool::test_support
