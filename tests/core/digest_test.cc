// The checksums other than CRC32C that stores keep: known vectors, streaming
// in pieces, and base64.
#include "spool/core/digest.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace spool {
namespace {

std::string Hex(DigestAlgorithm algorithm, std::string_view data) {
  return FormatDigest(algorithm, DigestOf(algorithm, data));
}

TEST(Digest, KnownVectors) {
  EXPECT_EQ(Hex(DigestAlgorithm::kMd5, "abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(Hex(DigestAlgorithm::kSha1, "abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Hex(DigestAlgorithm::kSha256, "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(DigestAlgorithm::kCrc32, "123456789"), "0xcbf43926");
  EXPECT_EQ(Hex(DigestAlgorithm::kCrc32c, "123456789"), "0xe3069283");
  EXPECT_EQ(Hex(DigestAlgorithm::kCrc64Nvme, "123456789"), "0xae8b14860a799888");
  EXPECT_EQ(Crc64NvmeExtend(0, "123456789", 9), 0xae8b14860a799888ull);
  EXPECT_EQ(Crc32Extend(0, "123456789", 9), 0xcbf43926u);
  EXPECT_EQ(Hex(DigestAlgorithm::kMd5, ""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Hex(DigestAlgorithm::kCrc64Nvme, ""), "0x0000000000000000");
}

// The value S3 sends for the same bytes: x-amz-checksum-crc64nvme of
// "123456789" is the big-endian value in base64.
TEST(Digest, ValuesAreBigEndianAsServicesSendThem) {
  EXPECT_EQ(Base64Encode(DigestOf(DigestAlgorithm::kCrc64Nvme, "123456789")), "rosUhgp5mIg=");
  EXPECT_EQ(Base64Encode(DigestOf(DigestAlgorithm::kMd5, "abc")), "kAFQmDzST7DWlj99KOF/cg==");
}

TEST(Digest, PiecesGiveTheSameValueAsTheWhole) {
  std::mt19937 random(7);
  std::string data(100003, '\0');
  for (char& c : data) c = static_cast<char>(random());
  for (DigestAlgorithm algorithm : {DigestAlgorithm::kCrc32, DigestAlgorithm::kCrc32c, DigestAlgorithm::kCrc64Nvme,
                                    DigestAlgorithm::kMd5, DigestAlgorithm::kSha1, DigestAlgorithm::kSha256}) {
    Hasher hasher(algorithm);
    for (size_t at = 0, step = 1; at < data.size(); at += step, step = step * 3 % 1001 + 1) {
      hasher.Update(std::string_view(data).substr(at, step));
    }
    const std::string whole = DigestOf(algorithm, data);
    EXPECT_EQ(hasher.Finish(), whole) << DigestName(algorithm);
    EXPECT_EQ(whole.size(), DigestSize(algorithm)) << DigestName(algorithm);
  }
}

TEST(Digest, Crc64NvmeMatchesABitwiseReference) {
  auto reference = [](std::string_view data) {
    uint64_t crc = ~uint64_t{0};
    for (unsigned char c : data) {
      crc ^= c;
      for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x9a6c9329ac4bc9b5ull : crc >> 1;
    }
    return ~crc;
  };
  std::mt19937 random(3);
  for (size_t size : {1, 7, 8, 9, 63, 64, 65, 1000}) {
    std::string data(size, '\0');
    for (char& c : data) c = static_cast<char>(random());
    EXPECT_EQ(Crc64NvmeExtend(0, data.data(), data.size()), reference(data)) << size;
    // Extending continues the stream.
    const uint64_t head = Crc64NvmeExtend(0, data.data(), size / 2);
    EXPECT_EQ(Crc64NvmeExtend(head, data.data() + size / 2, size - size / 2), reference(data)) << size;
  }
}

TEST(Digest, Base64RoundTripsAndRejectsWhatIsNotCanonical) {
  for (std::string raw : {"", "a", "ab", "abc", "abcd", "\xff\x00\x10"}) {
    EXPECT_EQ(Base64Decode(Base64Encode(raw)).value_or("?"), raw) << raw;
  }
  EXPECT_EQ(Base64Encode("abcd"), "YWJjZA==");
  EXPECT_FALSE(Base64Decode("YWJjZA=").has_value());
  EXPECT_FALSE(Base64Decode("YWJjZB==").has_value());  // padding bits set
  EXPECT_FALSE(Base64Decode("YW=jZA==").has_value());
  EXPECT_FALSE(Base64Decode("YWJj*A==").has_value());
  EXPECT_TRUE(IsDigestValue(DigestAlgorithm::kMd5, "kAFQmDzST7DWlj99KOF/cg=="));
  EXPECT_FALSE(IsDigestValue(DigestAlgorithm::kSha256, "kAFQmDzST7DWlj99KOF/cg=="));
  EXPECT_FALSE(IsDigestValue(DigestAlgorithm::kMd5, "kAFQmDzST7DWlj99KOF/cg==-2"));
}

}  // namespace
}  // namespace spool
