// Hashes and encodings the S3 protocol needs (SHA-256, HMAC-SHA256, MD5,
// hex, base64), implemented with OpenSSL behind plain std::string APIs so
// that no OpenSSL header leaks into other headers.
//
// All functions are pure and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace spool::s3 {

// Raw 32-byte SHA-256 digest.
std::string Sha256(std::string_view data);
// Lower-case hex of SHA-256, as SigV4 wants it.
std::string Sha256Hex(std::string_view data);
// Raw 32-byte HMAC-SHA256 of `data` under `key`.
std::string HmacSha256(std::string_view key, std::string_view data);
// Raw 16-byte MD5 digest.
std::string Md5(std::string_view data);

// Whether this CPU has SHA-256 instructions (the x86 SHA extensions, ARMv8's
// SHA2), which OpenSSL uses when present. With them SHA-256 is the cheaper
// of the two body digests S3 servers check (1.46 against MD5's 0.62 GB/s
// per core on the benchmark machine, docs/performance.md); without them it
// is the dearer one.
bool HasSha256Instructions();

// Incremental MD5 for bodies that arrive in pieces.
class Md5Stream {
 public:
  Md5Stream();
  ~Md5Stream();
  Md5Stream(const Md5Stream&) = delete;
  Md5Stream& operator=(const Md5Stream&) = delete;
  void Update(std::string_view data);
  std::string Finish();  // raw 16 bytes; the stream is spent afterwards

 private:
  void* ctx_;  // EVP_MD_CTX
};

std::string HexEncode(std::string_view bytes);
std::string Base64Encode(std::string_view bytes);
// nullopt when `text` is not valid base64.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace spool::s3
