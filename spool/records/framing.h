// TFRecord framing, as TensorFlow's RecordWriter writes it:
//
//   uint64 length          little-endian
//   uint32 masked_crc32c(length bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// masked = rotate_right(crc, 15) + 0xa282ead8. A record of n payload bytes
// takes n + 16 bytes. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "spool/core/crc32c.h"

namespace spool::records {

inline constexpr size_t kHeaderSize = 12;  // length + its CRC
inline constexpr size_t kFooterSize = 4;   // payload CRC
inline constexpr size_t kFramingSize = kHeaderSize + kFooterSize;

inline void EncodeFixed32(char* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(value >> (8 * i));
}
inline void EncodeFixed64(char* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
}
inline uint32_t DecodeFixed32(const char* in) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}
inline uint64_t DecodeFixed64(const char* in) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

inline uint32_t MaskedCrc(const char* data, size_t size) { return crc32c::Mask(crc32c::Value(data, size)); }

// Writes the 12-byte header of a record of `length` payload bytes.
inline void EncodeHeader(uint64_t length, char* out) {
  EncodeFixed64(out, length);
  EncodeFixed32(out + 8, MaskedCrc(out, 8));
}

// Writes the 4-byte footer of `payload`.
inline void EncodeFooter(std::string_view payload, char* out) {
  EncodeFixed32(out, MaskedCrc(payload.data(), payload.size()));
}

}  // namespace spool::records
