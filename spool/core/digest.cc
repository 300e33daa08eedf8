#include "spool/core/digest.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <array>
#include <cstring>
#include <limits>
#include <utility>

#include "spool/core/crc32c.h"

namespace spool {

namespace {

constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Slicing-by-8 tables of the reflected CRC64NVME polynomial.
constexpr uint64_t kCrc64NvmePolynomial = 0x9a6c9329ac4bc9b5ull;

struct Crc64Tables {
  std::array<std::array<uint64_t, 256>, 8> t{};
  constexpr Crc64Tables() {
    for (uint64_t i = 0; i < 256; ++i) {
      uint64_t crc = i;
      for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kCrc64NvmePolynomial : crc >> 1;
      t[0][i] = crc;
    }
    for (size_t i = 0; i < 256; ++i) {
      for (size_t k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
    }
  }
};

constexpr Crc64Tables kCrc64{};

uint64_t LoadLittleEndian64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string BigEndian(uint64_t value, size_t bytes) {
  std::string out(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) out[bytes - 1 - i] = static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

const EVP_MD* EvpOf(DigestAlgorithm algorithm) {
  switch (algorithm) {
    case DigestAlgorithm::kMd5: return EVP_md5();
    case DigestAlgorithm::kSha1: return EVP_sha1();
    case DigestAlgorithm::kSha256: return EVP_sha256();
    default: return nullptr;
  }
}

}  // namespace

std::string_view DigestName(DigestAlgorithm algorithm) {
  switch (algorithm) {
    case DigestAlgorithm::kCrc32: return "crc32";
    case DigestAlgorithm::kCrc32c: return "crc32c";
    case DigestAlgorithm::kCrc64Nvme: return "crc64nvme";
    case DigestAlgorithm::kMd5: return "md5";
    case DigestAlgorithm::kSha1: return "sha1";
    case DigestAlgorithm::kSha256: return "sha256";
  }
  return "unknown";
}

std::string_view DigestDisplayName(DigestAlgorithm algorithm) {
  switch (algorithm) {
    case DigestAlgorithm::kCrc32: return "CRC32";
    case DigestAlgorithm::kCrc32c: return "CRC32C";
    case DigestAlgorithm::kCrc64Nvme: return "CRC64NVME";
    case DigestAlgorithm::kMd5: return "MD5";
    case DigestAlgorithm::kSha1: return "SHA-1";
    case DigestAlgorithm::kSha256: return "SHA-256";
  }
  return "unknown";
}

size_t DigestSize(DigestAlgorithm algorithm) {
  switch (algorithm) {
    case DigestAlgorithm::kCrc32:
    case DigestAlgorithm::kCrc32c: return 4;
    case DigestAlgorithm::kCrc64Nvme: return 8;
    case DigestAlgorithm::kMd5: return 16;
    case DigestAlgorithm::kSha1: return 20;
    case DigestAlgorithm::kSha256: return 32;
  }
  return 0;
}

bool IsDigestValue(DigestAlgorithm algorithm, std::string_view base64) {
  std::optional<std::string> raw = Base64Decode(base64);
  return raw && raw->size() == DigestSize(algorithm);
}

struct Hasher::State {
  DigestAlgorithm algorithm;
  uint64_t crc = 0;            // the CRCs
  EVP_MD_CTX* ctx = nullptr;   // the hashes

  explicit State(DigestAlgorithm a) : algorithm(a) {
    if (const EVP_MD* md = EvpOf(a)) {
      ctx = EVP_MD_CTX_new();
      EVP_DigestInit_ex(ctx, md, nullptr);
    }
  }
  ~State() { EVP_MD_CTX_free(ctx); }
};

Hasher::Hasher(DigestAlgorithm algorithm) : state_(std::make_unique<State>(algorithm)) {}
Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

DigestAlgorithm Hasher::algorithm() const { return state_->algorithm; }

void Hasher::Update(const void* data, size_t size) {
  State& s = *state_;
  switch (s.algorithm) {
    case DigestAlgorithm::kCrc32:
      s.crc = Crc32Extend(static_cast<uint32_t>(s.crc), data, size);
      break;
    case DigestAlgorithm::kCrc32c:
      s.crc = crc32c::Extend(static_cast<uint32_t>(s.crc), data, size);
      break;
    case DigestAlgorithm::kCrc64Nvme:
      s.crc = Crc64NvmeExtend(s.crc, data, size);
      break;
    default:
      EVP_DigestUpdate(s.ctx, data, size);
  }
}

std::string Hasher::Finish() {
  State& s = *state_;
  switch (s.algorithm) {
    case DigestAlgorithm::kCrc32:
    case DigestAlgorithm::kCrc32c: return BigEndian(s.crc, 4);
    case DigestAlgorithm::kCrc64Nvme: return BigEndian(s.crc, 8);
    default: {
      unsigned char out[EVP_MAX_MD_SIZE];
      unsigned int size = 0;
      EVP_DigestFinal_ex(s.ctx, out, &size);
      return std::string(reinterpret_cast<const char*>(out), size);
    }
  }
}

std::string DigestOf(DigestAlgorithm algorithm, std::string_view data) {
  Hasher hasher(algorithm);
  hasher.Update(data);
  return hasher.Finish();
}

uint32_t Crc32Extend(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const Bytef*>(data);
  // zlib takes a uInt length: feed it in pieces that fit.
  constexpr size_t kMaxPiece = std::numeric_limits<uInt>::max() & ~size_t{0xfff};
  while (size > 0) {
    const size_t piece = size < kMaxPiece ? size : kMaxPiece;
    crc = static_cast<uint32_t>(::crc32(crc, p, static_cast<uInt>(piece)));
    p += piece;
    size -= piece;
  }
  return crc;
}

uint64_t Crc64NvmeExtend(uint64_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const auto& t = kCrc64.t;
  uint64_t reg = ~crc;
  for (; size >= 8; p += 8, size -= 8) {
    const uint64_t w = LoadLittleEndian64(p) ^ reg;
    reg = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
          t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
  }
  for (; size > 0; ++p, --size) reg = (reg >> 8) ^ t[0][(reg ^ *p) & 0xff];
  return ~reg;
}

std::string FormatDigest(DigestAlgorithm algorithm, std::string_view raw) {
  static constexpr char kHex[] = "0123456789abcdef";
  const bool crc = algorithm == DigestAlgorithm::kCrc32 || algorithm == DigestAlgorithm::kCrc32c ||
                   algorithm == DigestAlgorithm::kCrc64Nvme;
  std::string out = crc ? "0x" : "";
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

std::string Base64Encode(std::string_view raw) {
  std::string out;
  out.reserve((raw.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= raw.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(raw[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(raw[i + 1])} << 8) | static_cast<unsigned char>(raw[i + 2]);
    out += kBase64Alphabet[(v >> 18) & 0x3f];
    out += kBase64Alphabet[(v >> 12) & 0x3f];
    out += kBase64Alphabet[(v >> 6) & 0x3f];
    out += kBase64Alphabet[v & 0x3f];
  }
  const size_t left = raw.size() - i;
  if (left > 0) {
    uint32_t v = uint32_t{static_cast<unsigned char>(raw[i])} << 16;
    if (left == 2) v |= uint32_t{static_cast<unsigned char>(raw[i + 1])} << 8;
    out += kBase64Alphabet[(v >> 18) & 0x3f];
    out += kBase64Alphabet[(v >> 12) & 0x3f];
    out += left == 2 ? kBase64Alphabet[(v >> 6) & 0x3f] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int v[4];
    int padding = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++padding;
        continue;
      }
      if (padding > 0) return std::nullopt;  // '=' only at the very end
      v[k] = Base64Value(c);
      if (v[k] < 0) return std::nullopt;
    }
    const uint32_t bits = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    // Canonical only: the bits the padding leaves over are zero.
    if ((padding == 1 && (bits & 0xff) != 0) || (padding == 2 && (bits & 0xffff) != 0)) return std::nullopt;
    out += static_cast<char>((bits >> 16) & 0xff);
    if (padding < 2) out += static_cast<char>((bits >> 8) & 0xff);
    if (padding < 1) out += static_cast<char>(bits & 0xff);
  }
  return out;
}

}  // namespace spool
