#include "spool/core/bytes.h"

#include <gtest/gtest.h>

namespace spool {
namespace {

uint64_t Parsed(std::string_view text) {
  Result<uint64_t> bytes = ParseByteSize(text);
  EXPECT_TRUE(bytes.ok()) << text << ": " << bytes.status().ToString();
  return bytes.ok() ? *bytes : 0;
}

TEST(ParseByteSizeTest, PlainNumbers) {
  EXPECT_EQ(Parsed("0"), 0u);
  EXPECT_EQ(Parsed("4096"), 4096u);
  EXPECT_EQ(Parsed("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(Parsed(" 12 "), 12u);
  EXPECT_EQ(Parsed("7B"), 7u);
}

TEST(ParseByteSizeTest, UnitsAreBinaryAndCaseInsensitive) {
  EXPECT_EQ(Parsed("1K"), kKiB);
  EXPECT_EQ(Parsed("1kb"), kKiB);
  EXPECT_EQ(Parsed("1KiB"), kKiB);
  EXPECT_EQ(Parsed("256MiB"), 256 * kMiB);
  EXPECT_EQ(Parsed("256mb"), 256 * kMiB);
  EXPECT_EQ(Parsed("2G"), 2 * kGiB);
  EXPECT_EQ(Parsed("3 GiB"), 3 * kGiB);
  EXPECT_EQ(Parsed("1TiB"), 1024 * kGiB);
}

TEST(ParseByteSizeTest, Decimals) {
  EXPECT_EQ(Parsed("1.5GB"), 3 * kGiB / 2);
  EXPECT_EQ(Parsed("0.5KiB"), 512u);
  EXPECT_EQ(Parsed(".25M"), kMiB / 4);
  EXPECT_EQ(Parsed("0.1KiB"), 102u);  // rounded down to whole bytes
}

TEST(ParseByteSizeTest, Errors) {
  for (std::string_view text : {"", " ", "abc", "-1", "1.2.3", "12 apples", "5PB", "1e9", "KiB",
                                "18446744073709551616", "20000000000000000TiB", "1234567890123456789012345"}) {
    Result<uint64_t> bytes = ParseByteSize(text);
    ASSERT_FALSE(bytes.ok()) << "accepted \"" << text << "\"";
    EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
    std::string quoted = "\"";
    quoted += text;
    quoted += '"';
    EXPECT_NE(bytes.status().message().find(quoted), std::string::npos)
        << bytes.status().message();
  }
}

TEST(FormatBytesTest, Examples) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3 * kGiB / 2), "1.5 GiB");
  EXPECT_EQ(FormatBytes(kMiB - 1), "1.0 MiB");  // never "1024.0 KiB"
  EXPECT_EQ(FormatBytes(5 * 1024 * kGiB), "5.0 TiB");
  EXPECT_EQ(FormatBytes(UINT64_MAX), "16.0 EiB");
}

TEST(FormatBytesTest, ParsesBack) {
  for (uint64_t bytes : {kKiB, 3 * kMiB, 7 * kGiB}) {
    std::string text = FormatBytes(bytes);
    EXPECT_EQ(Parsed(text), bytes) << text;
  }
}

}  // namespace
}  // namespace spool
