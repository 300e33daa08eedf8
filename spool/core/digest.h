// Checksums other than CRC32C that object stores keep for an object, and
// the code that computes them over bytes fed in order: MD5, SHA-1, SHA-256
// (OpenSSL, behind this header), CRC32 (zlib) and CRC64NVME (a table of our
// own). spool's own checksum is CRC32C (core/crc32c.h); these verify reads of
// objects that other tools wrote (docs/integrity.md).
//
// Values are the raw digest bytes, big-endian for the CRCs, which is how S3
// (x-amz-checksum-*) and GCS (md5Hash) carry them, in base64.
// All functions are thread-safe; a Hasher is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace spool {

enum class DigestAlgorithm { kCrc32, kCrc32c, kCrc64Nvme, kMd5, kSha1, kSha256 };

// "crc32", "crc32c", "crc64nvme", "md5", "sha1", "sha256": as spool stat and
// --json name them.
std::string_view DigestName(DigestAlgorithm algorithm);
// "CRC32", "CRC32C", "CRC64NVME", "MD5", "SHA-1", "SHA-256": as messages name them.
std::string_view DigestDisplayName(DigestAlgorithm algorithm);
// Bytes of the raw value: 4, 4, 8, 16, 20, 32.
size_t DigestSize(DigestAlgorithm algorithm);

// A checksum of the whole object that its store keeps, other than the
// CRC32C in ObjectInfo::crc32c.
struct StoredDigest {
  DigestAlgorithm algorithm = DigestAlgorithm::kMd5;
  std::string base64;  // the raw value in base64, as the service sends it
  // Where the value came from, as the service names it: "ETag" (the MD5 a
  // single-part S3 object's ETag is), "x-amz-checksum-sha256", "md5Hash".
  std::string source;
};

// Whether `base64` decodes to a value of `algorithm`'s size.
bool IsDigestValue(DigestAlgorithm algorithm, std::string_view base64);

// Computes one algorithm's value over bytes fed in order.
class Hasher {
 public:
  explicit Hasher(DigestAlgorithm algorithm);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  DigestAlgorithm algorithm() const;
  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // The raw value; the hasher is spent afterwards.
  std::string Finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The raw value of `algorithm` over `data`.
std::string DigestOf(DigestAlgorithm algorithm, std::string_view data);

// CRC32 (ISO-HDLC, zlib's and S3's x-amz-checksum-crc32) of data appended to
// a stream whose CRC so far is `crc` (0 to start).
uint32_t Crc32Extend(uint32_t crc, const void* data, size_t size);
// CRC64NVME (S3's x-amz-checksum-crc64nvme: reflected polynomial
// 0x9a6c9329ac4bc9b5, initial value and final XOR all ones), the same way.
uint64_t Crc64NvmeExtend(uint64_t crc, const void* data, size_t size);

// How messages show a raw value: "0x1a2b3c4d" for the CRCs, lower-case hex
// for the hashes.
std::string FormatDigest(DigestAlgorithm algorithm, std::string_view raw);

// Standard base64 with padding.
std::string Base64Encode(std::string_view raw);
// nullopt when `text` is not canonical padded base64.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace spool
