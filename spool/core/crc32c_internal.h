// Polynomial arithmetic modulo the CRC32C polynomial, shared by Combine and
// the SSE4.2 implementation. Not part of the public API.
//
// Values use the reflected bit order of the CRC register: bit 31 holds the
// coefficient of x^0 and bit 0 the coefficient of x^31. All functions are
// constexpr so that fixed shift constants are computed at compile time.
#pragma once

#include <cstdint>

namespace spool::crc32c::internal {

// The CRC32C (Castagnoli) polynomial 0x1EDC6F41, bit-reflected.
inline constexpr uint32_t kPolynomial = 0x82f63b78u;

// The polynomial x^0 = 1 in reflected order.
inline constexpr uint32_t kOne = 0x80000000u;

// p * x mod P.
constexpr uint32_t MultiplyByX(uint32_t p) { return (p & 1) ? (p >> 1) ^ kPolynomial : p >> 1; }

// a * b mod P (the method of zlib's multmodp).
constexpr uint32_t MultiplyModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = kOne; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = MultiplyByX(b);
  }
  return product;
}

// x^n mod P by repeated multiplication: for compile-time constants only
// (linear in n).
constexpr uint32_t XPowModPSlow(uint64_t n) {
  uint32_t p = kOne;
  for (uint64_t i = 0; i < n; ++i) p = MultiplyByX(p);
  return p;
}

}  // namespace spool::crc32c::internal
