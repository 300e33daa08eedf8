#include "cli/commands/locations.h"

#include <gtest/gtest.h>

#include "spool/core/storage/memory_store.h"

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

TEST(LocationsTest, FolderPrefixAndBaseName) {
  EXPECT_EQ(FolderPrefix(""), "");
  EXPECT_EQ(FolderPrefix("data"), "data/");
  EXPECT_EQ(FolderPrefix("data/"), "data/");
  EXPECT_EQ(BaseName("a/b/c.txt"), "c.txt");
  EXPECT_EQ(BaseName("a/b/"), "b");
  EXPECT_EQ(BaseName("top"), "top");
}

TEST(LocationsTest, ForEachPageVisitsEveryPageAndFoldersAreDetected) {
  MemoryStore::ClearBucket("cli-locations");
  MemoryStore store("cli-locations");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(WriteAll(store, "dir/k" + std::to_string(i), "x").ok());
  ListOptions options;
  options.prefix = "dir/";
  options.max_keys = 2;
  int pages = 0;
  size_t objects = 0;
  ASSERT_TRUE(ForEachPage(store, options, [&](const ListPage& page) {
                ++pages;
                objects += page.objects.size();
                return OkStatus();
              }).ok());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(objects, 5u);
  EXPECT_TRUE(IsNonEmptyFolder(store, "dir").value_or(false));
  EXPECT_FALSE(IsNonEmptyFolder(store, "dir/k1").value_or(true));
}

}  // namespace
}  // namespace spool::cli
