#include "spool/core/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace spool::crc32c {
namespace {

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);

struct Implementation {
  const char* name;
  ExtendFn extend;
};

// Every implementation this CPU can run; Extend is whichever was chosen.
std::vector<Implementation> Implementations() {
  std::vector<Implementation> out = {{"Extend", &Extend},
                                     {"ExtendPortable", &ExtendPortable},
                                     {"ExtendTableBytewise", &ExtendTableBytewise}};
  if (HasSse42()) out.push_back({"ExtendSse42", &ExtendSse42});
  return out;
}

std::vector<uint8_t> RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(size);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

TEST(Crc32cTest, ImplementationIsNamed) {
  std::string name = ImplementationName();
  EXPECT_TRUE(name == "isal" || name == "sse42" || name == "portable") << name;
  if (name != "portable") {
    EXPECT_TRUE(HasSse42());
  }
}

// RFC 3720, appendix B.4.
TEST(Crc32cTest, Rfc3720Vectors) {
  uint8_t zeros[32], ones[32], ascending[32], descending[32];
  std::memset(zeros, 0, sizeof zeros);
  std::memset(ones, 0xff, sizeof ones);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<uint8_t>(i);
    descending[i] = static_cast<uint8_t>(31 - i);
  }
  for (const Implementation& impl : Implementations()) {
    SCOPED_TRACE(impl.name);
    EXPECT_EQ(impl.extend(0, zeros, 32), 0x8a9136aau);
    EXPECT_EQ(impl.extend(0, ones, 32), 0x62a8ab43u);
    EXPECT_EQ(impl.extend(0, ascending, 32), 0x46dd794eu);
    EXPECT_EQ(impl.extend(0, descending, 32), 0x113fdb5cu);
    EXPECT_EQ(impl.extend(0, "123456789", 9), 0xe3069283u);
    EXPECT_EQ(impl.extend(0, "", 0), 0u);
  }
  EXPECT_EQ(Value("123456789"), 0xe3069283u);
}

// The iSCSI read command PDU of RFC 3720 B.4.
TEST(Crc32cTest, Rfc3720IscsiPdu) {
  const uint8_t pdu[48] = {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                           0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
                           0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
                           0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  for (const Implementation& impl : Implementations()) {
    EXPECT_EQ(impl.extend(0, pdu, sizeof pdu), 0xd9963a56u) << impl.name;
  }
}

// Masked CRCs of the TFRecord golden files in shared/data/tfrecord: a record
// is length (8 bytes LE), masked crc of the length, data, masked crc of data.
TEST(Crc32cTest, TfRecordMaskedValues) {
  const uint8_t length3[8] = {3, 0, 0, 0, 0, 0, 0, 0};
  const uint8_t length0[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(Mask(Value(length3, 8)), 0x0e4999b0u);  // beam_foo.tfrecord bytes 8..11
  EXPECT_EQ(Mask(Value(length0, 8)), 0x07980329u);  // zero_length_records.tfrecord
  EXPECT_EQ(Mask(Value("foo")), 0xfebe8a61u);
  EXPECT_EQ(Mask(Value("bar")), 0xc8e50046u);
  EXPECT_EQ(Mask(Value("")), 0xa282ead8u);
}

TEST(Crc32cTest, MaskRoundTrips) {
  for (uint32_t crc : {0u, 1u, 0xe3069283u, 0xffffffffu, 0x80000000u}) {
    EXPECT_EQ(Unmask(Mask(crc)), crc);
  }
  EXPECT_NE(Mask(0xe3069283u), 0xe3069283u);
}

// Every length 0..300 at every alignment 0..15, from a random buffer: the
// implementations cover their alignment prologue, blocks and tails.
TEST(Crc32cTest, ImplementationsAgreeOnAllShortLengthsAndAlignments) {
  std::vector<uint8_t> buffer = RandomBytes(300 + 16, 1);
  std::vector<Implementation> impls = Implementations();
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t size = 0; size <= 300; ++size) {
      const uint8_t* p = buffer.data() + offset;
      uint32_t expected = ExtendTableBytewise(0x12345678u, p, size);
      for (const Implementation& impl : impls) {
        ASSERT_EQ(impl.extend(0x12345678u, p, size), expected)
            << impl.name << " size " << size << " offset " << offset;
      }
    }
  }
}

// Sizes around the SSE4.2 block boundaries (3 x 256 and 3 x 4096 bytes).
TEST(Crc32cTest, ImplementationsAgreeOnLargeBuffers) {
  std::vector<uint8_t> buffer = RandomBytes(200'000, 2);
  std::mt19937 rng(3);
  std::vector<size_t> sizes = {767, 768, 769, 1535, 1536, 12287, 12288, 12289, 13056, 24576 + 768 + 7, 200'000 - 8};
  for (int i = 0; i < 40; ++i) sizes.push_back(rng() % (200'000 - 8));
  for (size_t size : sizes) {
    size_t offset = rng() % 8;
    const uint8_t* p = buffer.data() + offset;
    uint32_t expected = ExtendPortable(0, p, size);
    for (const Implementation& impl : Implementations()) {
      ASSERT_EQ(impl.extend(0, p, size), expected) << impl.name << " size " << size << " offset " << offset;
    }
  }
}

TEST(Crc32cTest, ExtendInPiecesEqualsWhole) {
  std::vector<uint8_t> buffer = RandomBytes(50'000, 4);
  uint32_t whole = Value(buffer.data(), buffer.size());
  std::mt19937 rng(5);
  for (const Implementation& impl : Implementations()) {
    uint32_t crc = 0;
    size_t pos = 0;
    while (pos < buffer.size()) {
      size_t piece = std::min<size_t>(rng() % 5000, buffer.size() - pos);
      crc = impl.extend(crc, buffer.data() + pos, piece);
      pos += piece;
    }
    EXPECT_EQ(crc, whole) << impl.name;
  }
}

TEST(Crc32cTest, Combine) {
  std::vector<uint8_t> buffer = RandomBytes(70'000, 6);
  uint32_t whole = Value(buffer.data(), buffer.size());
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{4096}, size_t{69'999}, size_t{70'000}}) {
    uint32_t a = Value(buffer.data(), split);
    uint32_t b = Value(buffer.data() + split, buffer.size() - split);
    EXPECT_EQ(Combine(a, b, buffer.size() - split), whole) << "split " << split;
  }
  // Three parts, combined left to right.
  uint32_t ab = Combine(Value(buffer.data(), 100), Value(buffer.data() + 100, 900), 900);
  EXPECT_EQ(Combine(ab, Value(buffer.data() + 1000, 69'000), 69'000), whole);
}

TEST(Crc32cTest, CombineOfLongRunsOfZeros) {
  // Doubling a run with Combine (len_b with many bits and large powers of
  // two) agrees with a direct computation over 4 MiB.
  std::vector<uint8_t> zeros(4 << 20, 0);
  uint32_t direct = Value(zeros.data(), zeros.size());
  uint32_t crc = Value(zeros.data(), 1);
  for (uint64_t len = 1; len < zeros.size(); len *= 2) crc = Combine(crc, crc, len);
  EXPECT_EQ(crc, direct);
}

TEST(Crc32cTest, Base64) {
  // GCS's documented example: crc32c of "hello world" is "yZRlqg==".
  EXPECT_EQ(ToBase64(Value("hello world")), "yZRlqg==");
  EXPECT_EQ(ToBase64(0), "AAAAAA==");
  EXPECT_EQ(ToBase64(0xffffffffu), "/////w==");
  uint32_t crc = 0;
  ASSERT_TRUE(FromBase64("yZRlqg==", &crc));
  EXPECT_EQ(crc, Value("hello world"));
  for (uint32_t value : {0u, 1u, 0xe3069283u, 0xffffffffu, 0x0e4999b0u}) {
    ASSERT_TRUE(FromBase64(ToBase64(value), &crc));
    EXPECT_EQ(crc, value);
  }
  for (std::string_view bad : {"", "yZRlqg=", "yZRlqg", "yZRlqgAA", "yZR!qg==", "yZRlqh==", "yZRlqg==="}) {
    EXPECT_FALSE(FromBase64(bad, &crc)) << bad;
  }
}

}  // namespace
}  // namespace spool::crc32c
