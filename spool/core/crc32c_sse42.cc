// CRC32C with the SSE4.2 crc32 instruction. Compiled with -msse4.2 -mpclmul
// and only called after HasSse42() said the CPU has both; this file must not
// instantiate inline library code (which the linker could share with other
// files) so that nothing built for SSE4.2 runs on a CPU without it.
//
// The crc32 instruction has a latency of about three cycles and a throughput
// of one per cycle, so a single chain runs at a third of the possible speed.
// Large buffers are therefore cut into blocks of three equal stretches whose
// CRCs run as three independent chains; at the end of a block the first two
// are shifted past the bytes that follow them (a carry-less multiply by
// x^n mod P, reduced by one more crc32) and folded into the third.
#include <nmmintrin.h>
#include <wmmintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "spool/core/crc32c.h"
#include "spool/core/crc32c_internal.h"

namespace spool::crc32c {
namespace {

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The constant that shifts a register by `bits` bits of data with Shift():
// clmul(a, b) of reflected values is a * b * x, and crc32 of those 64 bits
// multiplies by x^32 once more, so b = x^(bits - 33). constexpr, not
// consteval: clang 14 rejects a consteval call with a template-dependent
// argument; the constexpr variables below still force compile-time evaluation.
constexpr uint64_t ShiftConstant(uint64_t bits) { return internal::XPowModPSlow(bits - 33); }

// reg * x^(bits) mod P, where `constant` = ShiftConstant(bits).
inline uint64_t Shift(uint64_t reg, uint64_t constant) {
  __m128i product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(static_cast<int64_t>(reg)),
                                         _mm_cvtsi64_si128(static_cast<int64_t>(constant)), 0);
  return _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(product)));
}

// Consumes as many blocks of 3 x kStretch bytes as `size` holds.
template <size_t kStretch>
inline void ProcessBlocks(uint64_t& reg, const uint8_t*& p, size_t& size) {
  static_assert(kStretch % 8 == 0);
  constexpr uint64_t kShiftOne = ShiftConstant(8 * kStretch);
  constexpr uint64_t kShiftTwo = ShiftConstant(16 * kStretch);
  while (size >= 3 * kStretch) {
    uint64_t a = reg, b = 0, c = 0;
    for (size_t i = 0; i < kStretch; i += 8) {
      a = _mm_crc32_u64(a, Load64(p + i));
      b = _mm_crc32_u64(b, Load64(p + kStretch + i));
      c = _mm_crc32_u64(c, Load64(p + 2 * kStretch + i));
    }
    reg = Shift(a, kShiftTwo) ^ Shift(b, kShiftOne) ^ c;
    p += 3 * kStretch;
    size -= 3 * kStretch;
  }
}

}  // namespace

uint32_t ExtendSse42(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t reg = ~crc;
  // Align to 8 bytes so the 8-byte loads never straddle a cache line.
  while (size > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    reg = _mm_crc32_u8(static_cast<uint32_t>(reg), *p++);
    --size;
  }
  ProcessBlocks<4096>(reg, p, size);  // large buffers: shifts are rare
  ProcessBlocks<256>(reg, p, size);   // the rest of a medium buffer
  for (; size >= 8; p += 8, size -= 8) reg = _mm_crc32_u64(reg, Load64(p));
  for (; size > 0; ++p, --size) reg = _mm_crc32_u8(static_cast<uint32_t>(reg), *p);
  return ~static_cast<uint32_t>(reg);
}

}  // namespace spool::crc32c
