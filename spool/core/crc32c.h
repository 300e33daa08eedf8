// CRC32C (Castagnoli), as used by TFRecord framing, S3's
// x-amz-checksum-crc32c and GCS's x-goog-hash.
//
// The fastest implementation available on this CPU is chosen once at run
// time: ISA-L's crc32_iscsi where spool was built with it, else the SSE4.2
// instruction with three interleaved chains, else portable slicing-by-8.
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace spool::crc32c {

// CRC32C of data appended to a stream whose CRC so far is `crc` (0 to start).
uint32_t Extend(uint32_t crc, const void* data, size_t size);

inline uint32_t Value(const void* data, size_t size) { return Extend(0, data, size); }
inline uint32_t Value(std::string_view data) { return Extend(0, data.data(), data.size()); }

// CRC of A+B from crc(A), crc(B) and the length of B, in O(log len_b).
uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// TFRecord's masked CRC: rotate right by 15 bits and add 0xa282ead8.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

// Which implementation Extend uses: "isal", "sse42" or "portable".
const char* ImplementationName();

// The individual implementations, for tests and the benchmark.
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t size);
// A plain one-byte-at-a-time table CRC: the baseline the benchmark reports against.
uint32_t ExtendTableBytewise(uint32_t crc, const void* data, size_t size);
// Available only when the CPU has SSE4.2 and PCLMULQDQ (see HasSse42()).
uint32_t ExtendSse42(uint32_t crc, const void* data, size_t size);
bool HasSse42();

// "0x1a2b3c4d": how messages and listings show a CRC.
std::string ToHex(uint32_t crc);

// Base64 of the big-endian CRC, as S3 and GCS headers carry it.
std::string ToBase64(uint32_t crc);
bool FromBase64(std::string_view text, uint32_t* crc);

}  // namespace spool::crc32c
