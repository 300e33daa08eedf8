// Portable CRC32C implementations, the run-time dispatch, Combine and the
// base64 form used by S3 and GCS headers. The SSE4.2 implementation lives in
// crc32c_sse42.cc, the only file compiled for that instruction set.
#include "spool/core/crc32c.h"

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>

#include "spool/core/crc32c_internal.h"

#ifdef SPOOL_HAVE_ISAL
#include <isa-l/crc.h>
#endif

namespace spool::crc32c {
namespace {

using internal::kPolynomial;

// kTables[0] is the classic byte-at-a-time table; kTables[k][b] is the CRC
// register of byte b followed by k zero bytes, which lets slicing-by-8 fold
// eight bytes with eight independent lookups.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kPolynomial : crc >> 1;
    t[0][b] = crc;
  }
  for (size_t k = 1; k < t.size(); ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

uint64_t LoadLittleEndian64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

// The CRC register update for `size` bytes, one byte at a time.
uint32_t UpdateBytewise(uint32_t reg, const uint8_t* p, size_t size) {
  for (size_t i = 0; i < size; ++i) reg = (reg >> 8) ^ kTables[0][(reg ^ p[i]) & 0xff];
  return reg;
}

#ifdef SPOOL_HAVE_ISAL
// ISA-L's crc32_iscsi works on the raw register (no pre- or post-inversion)
// and takes an int length, so the register is inverted here and long buffers
// are fed in pieces.
uint32_t ExtendIsal(uint32_t crc, const void* data, size_t size) {
  constexpr size_t kMaxPiece = size_t{1} << 30;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t reg = ~crc;
  while (size > 0) {
    size_t piece = size < kMaxPiece ? size : kMaxPiece;
    reg = crc32_iscsi(p, static_cast<int>(piece), reg);
    p += piece;
    size -= piece;
  }
  return ~reg;
}
#endif

struct Implementation {
  uint32_t (*extend)(uint32_t, const void*, size_t);
  const char* name;
};

Implementation Choose() {
  // ISA-L dispatches internally too, but without SSE4.2 it falls back to a
  // bytewise table, which is slower than our slicing-by-8.
#ifdef SPOOL_HAVE_ISAL
  if (HasSse42()) return {&ExtendIsal, "isal"};
#endif
  if (HasSse42()) return {&ExtendSse42, "sse42"};
  return {&ExtendPortable, "portable"};
}

const Implementation& Chosen() {
  static const Implementation chosen = Choose();
  return chosen;
}

// kXPow2[k] = x^(2^k) mod P, for Combine's square-and-multiply.
constexpr std::array<uint32_t, 67> MakeXPow2Table() {
  std::array<uint32_t, 67> t{};
  t[0] = internal::MultiplyByX(internal::kOne);
  for (size_t k = 1; k < t.size(); ++k) t[k] = internal::MultiplyModP(t[k - 1], t[k - 1]);
  return t;
}

constexpr std::array<uint32_t, 67> kXPow2 = MakeXPow2Table();

constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Base64Value(char c) {
  const char* hit = std::strchr(kBase64Alphabet, c);
  return (c != '\0' && hit != nullptr) ? static_cast<int>(hit - kBase64Alphabet) : -1;
}

}  // namespace

uint32_t Extend(uint32_t crc, const void* data, size_t size) { return Chosen().extend(crc, data, size); }

const char* ImplementationName() { return Chosen().name; }

uint32_t ExtendTableBytewise(uint32_t crc, const void* data, size_t size) {
  return ~UpdateBytewise(~crc, static_cast<const uint8_t*>(data), size);
}

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t reg = ~crc;
  for (; size >= 8; p += 8, size -= 8) {
    uint64_t w = LoadLittleEndian64(p) ^ reg;
    reg = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
          kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^ kTables[2][(w >> 40) & 0xff] ^
          kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
  }
  return ~UpdateBytewise(reg, p, size);
}

bool HasSse42() {
#if defined(__x86_64__) || defined(__i386__)
  // The SSE4.2 path also uses PCLMULQDQ to join its interleaved chains.
  // __builtin_cpu_init makes the check valid even before main (a static
  // initializer computing a CRC).
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
  }();
  return has;
#else
  return false;
#endif
}

uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  // crc(A+B) = crc(A) * x^(8 len_b) ^ crc(B): the pre- and post-inversions
  // cancel. x^(8 len_b) is built from the bits of len_b, starting at x^(2^3).
  uint32_t shift = internal::kOne;
  for (size_t k = 3; len_b != 0; ++k, len_b >>= 1) {
    if (len_b & 1) shift = internal::MultiplyModP(kXPow2[k], shift);
  }
  return internal::MultiplyModP(shift, crc_a) ^ crc_b;
}

std::string ToHex(uint32_t crc) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", crc);
  return text;
}

std::string ToBase64(uint32_t crc) {
  // 32 bits: five full sextets, then 2 bits padded with zeros, then "==".
  uint64_t bits = uint64_t{crc} << 4;  // 36 bits = six sextets
  std::string out(8, '=');
  for (int i = 0; i < 6; ++i) out[i] = kBase64Alphabet[(bits >> (30 - 6 * i)) & 0x3f];
  return out;
}

bool FromBase64(std::string_view text, uint32_t* crc) {
  if (text.size() != 8 || text[6] != '=' || text[7] != '=') return false;
  uint64_t bits = 0;
  for (int i = 0; i < 6; ++i) {
    int v = Base64Value(text[i]);
    if (v < 0) return false;
    bits = (bits << 6) | static_cast<uint64_t>(v);
  }
  if (bits & 0xf) return false;  // non-canonical: the padding bits must be zero
  *crc = static_cast<uint32_t>(bits >> 4);
  return true;
}

}  // namespace spool::crc32c
