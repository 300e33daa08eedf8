#include "spool/core/strings.h"

#include <gtest/gtest.h>

#include <clocale>
#include <string>

namespace spool {
namespace {

TEST(AsciiToLower, FoldsOnlyAsciiLetters) {
  EXPECT_EQ(AsciiToLower('A'), 'a');
  EXPECT_EQ(AsciiToLower('Z'), 'z');
  EXPECT_EQ(AsciiToLower('a'), 'a');
  EXPECT_EQ(AsciiToLower('0'), '0');
  EXPECT_EQ(AsciiToLower('@'), '@');  // just before 'A'
  EXPECT_EQ(AsciiToLower('['), '[');  // just after 'Z'
  EXPECT_EQ(AsciiToLower('\xC9'), '\xC9');  // 'É' in Latin-1 stays as it is
}

TEST(AsciiToLower, CopiesTextWithLettersLowered) {
  EXPECT_EQ(AsciiToLower(std::string_view("Content-Type: X-Amz-Date")), "content-type: x-amz-date");
  EXPECT_EQ(AsciiToLower(std::string_view("")), "");
  // UTF-8 bytes pass through untouched: "Ä" is not folded to "ä".
  EXPECT_EQ(AsciiToLower(std::string_view("\xC3\x84" "Bc")), "\xC3\x84" "bc");
  // Embedded NULs are bytes like any other.
  EXPECT_EQ(AsciiToLower(std::string_view("A\0B", 3)), std::string("a\0b", 3));
}

TEST(EqualsIgnoreCase, MatchesWhenOnlyAsciiCaseDiffers) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Length", "content-length"));
  EXPECT_TRUE(EqualsIgnoreCase("X-GOOG-HASH", "x-goog-hash"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_TRUE(EqualsIgnoreCase("KiB", "kib"));
}

TEST(EqualsIgnoreCase, DiffersOnLengthOrOtherBytes) {
  EXPECT_FALSE(EqualsIgnoreCase("etag", "etags"));
  EXPECT_FALSE(EqualsIgnoreCase("etag", ""));
  EXPECT_FALSE(EqualsIgnoreCase("a-b", "a_b"));
  // '@' and '`' sit next to the letters and differ from them by 0x20 as
  // letters' cases do; they are not letters and must not be folded.
  EXPECT_FALSE(EqualsIgnoreCase("@", "`"));
  EXPECT_FALSE(EqualsIgnoreCase("[", "{"));
  EXPECT_FALSE(EqualsIgnoreCase("\xC3\x84", "\xC3\xA4"));  // "Ä" vs "ä"
}

TEST(EqualsIgnoreCase, IgnoresTheProcessLocale) {
  // In a Turkish locale std::tolower('I') may be a dotless i; ASCII folding
  // must not care. The locale may be missing here, which is fine too.
  const std::string previous = std::setlocale(LC_ALL, nullptr);
  std::setlocale(LC_ALL, "tr_TR.UTF-8");
  EXPECT_TRUE(EqualsIgnoreCase("AUTHORIZATION", "authorization"));
  EXPECT_EQ(AsciiToLower(std::string_view("TITLE")), "title");
  std::setlocale(LC_ALL, previous.c_str());
}

}  // namespace
}  // namespace spool
