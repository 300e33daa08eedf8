// HttpHeaders and the sinks: no server needed.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "spool/core/http/transport.h"

namespace spool {
namespace {

TEST(HttpHeadersTest, GetIgnoresCaseAndReturnsTheFirst) {
  HttpHeaders headers;
  headers.Add("Content-Length", "10");
  headers.Add("x-amz-meta-a", "1");
  headers.Add("X-Amz-Meta-A", "2");
  EXPECT_EQ(headers.Get("content-length"), "10");
  EXPECT_EQ(headers.Get("CONTENT-LENGTH"), "10");
  EXPECT_EQ(headers.Get("X-AMZ-META-A"), "1");
  EXPECT_TRUE(headers.Has("x-AMZ-meta-a"));
  EXPECT_FALSE(headers.Has("Content-Type"));
  EXPECT_EQ(headers.Get("Content-Lengt"), std::nullopt);
}

TEST(HttpHeadersTest, AddKeepsOrderAndDuplicates) {
  HttpHeaders headers;
  headers.Add("B", "1");
  headers.Add("A", "2");
  headers.Add("b", "3");
  ASSERT_EQ(headers.entries().size(), 3u);
  EXPECT_EQ(headers.entries()[0], (std::pair<std::string, std::string>("B", "1")));
  EXPECT_EQ(headers.entries()[1], (std::pair<std::string, std::string>("A", "2")));
  EXPECT_EQ(headers.entries()[2], (std::pair<std::string, std::string>("b", "3")));
}

TEST(HttpHeadersTest, SetReplacesEveryValueOfTheName) {
  HttpHeaders headers;
  headers.Add("Range", "bytes=0-1");
  headers.Add("Host", "h");
  headers.Add("RANGE", "bytes=2-3");
  headers.Set("range", "bytes=4-5");
  ASSERT_EQ(headers.entries().size(), 2u);
  EXPECT_EQ(headers.entries()[0].first, "Host");
  EXPECT_EQ(headers.entries()[1], (std::pair<std::string, std::string>("range", "bytes=4-5")));
  EXPECT_EQ(headers.Get("Range"), "bytes=4-5");
}

// The object's size as a 206 or a 416 states it; nothing where it is not a
// number (unknown, "*", cut short, or garbage after it).
TEST(HttpHeadersTest, ContentRangeTotalIsTheSizeAfterTheSlash) {
  auto total = [](std::string_view value) {
    HttpHeaders headers;
    if (!value.empty()) headers.Add("content-range", std::string(value));
    return ContentRangeTotal(headers);
  };
  EXPECT_EQ(total("bytes 0-99/1234"), 1234u);
  EXPECT_EQ(total("bytes */1234"), 1234u);  // a 416's form
  EXPECT_EQ(total("bytes 0-0/18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(total(""), std::nullopt);
  EXPECT_EQ(total("bytes 0-99/*"), std::nullopt);
  EXPECT_EQ(total("bytes 0-99/"), std::nullopt);
  EXPECT_EQ(total("bytes 0-99"), std::nullopt);
  EXPECT_EQ(total("bytes 0-99/12x"), std::nullopt);
  EXPECT_EQ(total("bytes 0-99/-5"), std::nullopt);
  EXPECT_EQ(total("bytes 0-99/18446744073709551616"), std::nullopt);  // past uint64
}

TEST(BufferSinkTest, FillsTheBufferInOrder) {
  std::array<char, 8> buffer{};
  BufferSink sink(buffer);
  ASSERT_TRUE(sink.Write("abc").ok());
  ASSERT_TRUE(sink.Write("defgh").ok());
  EXPECT_EQ(sink.size(), 8u);
  EXPECT_EQ(std::string_view(buffer.data(), 8), "abcdefgh");
}

TEST(BufferSinkTest, OverflowIsOutOfRangeAndKeepsWhatFit) {
  std::array<char, 4> buffer{};
  BufferSink sink(buffer);
  ASSERT_TRUE(sink.Write("abc").ok());
  Status status = sink.Write("de");
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_NE(status.message().find("4-byte buffer"), std::string::npos) << status.message();
  EXPECT_EQ(sink.size(), 3u);
}

TEST(StringSinkTest, Appends) {
  std::string out = "x";
  StringSink sink(&out);
  ASSERT_TRUE(sink.Write("yz").ok());
  EXPECT_EQ(out, "xyz");
}

}  // namespace
}  // namespace spool
