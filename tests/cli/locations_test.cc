#include "cli/commands/locations.h"

#include <gtest/gtest.h>

namespace spool::cli {
namespace {

TEST(LocationsTest, SafeRelativeKeysStayInsideTheFolder) {
  EXPECT_TRUE(IsSafeRelativeKey("a"));
  EXPECT_TRUE(IsSafeRelativeKey("a/b/c.txt"));
  EXPECT_TRUE(IsSafeRelativeKey("..hidden/x..y"));
  EXPECT_FALSE(IsSafeRelativeKey(""));
  EXPECT_FALSE(IsSafeRelativeKey("/etc/passwd"));
  EXPECT_FALSE(IsSafeRelativeKey("../escape"));
  EXPECT_FALSE(IsSafeRelativeKey("a/../../escape"));
  EXPECT_FALSE(IsSafeRelativeKey("a/./b"));
  EXPECT_FALSE(IsSafeRelativeKey("a//b"));
  EXPECT_FALSE(IsSafeRelativeKey("a/"));
  EXPECT_FALSE(IsSafeRelativeKey(".."));
}

TEST(LocationsTest, BaseName) {
  EXPECT_EQ(BaseName("a/b/c.txt"), "c.txt");
  EXPECT_EQ(BaseName("a/b/"), "b");
  EXPECT_EQ(BaseName("top"), "top");
}

}  // namespace
}  // namespace spool::cli
