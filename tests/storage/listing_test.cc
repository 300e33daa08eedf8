// The listing helpers: pages, folder checks, and ListNamed, the rule that
// `spool ls` and spool.ls share for what a name lists.
#include "spool/core/storage/listing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spool/core/storage/memory_store.h"

namespace spool {
namespace {

class ListingTest : public ::testing::Test {
 protected:
  void SetUp() override { MemoryStore::ClearBucket("listing-test"); }

  void Put(const std::string& key) { ASSERT_TRUE(WriteAll(store_, key, "x").ok()) << key; }

  // What ListNamed shows, one line per entry, folders ending in '/'.
  std::vector<std::string> Listed(const std::string& key, bool recursive = false) {
    std::vector<std::string> lines;
    Status listed = ListNamed(store_, key, recursive, [&](const ObjectInfo& info, bool is_folder) {
      EXPECT_EQ(is_folder, info.key.ends_with('/')) << info.key;
      lines.push_back(info.key);
      return OkStatus();
    });
    EXPECT_TRUE(listed.ok()) << listed.ToString();
    return lines;
  }

  MemoryStore store_{"listing-test"};
};

TEST_F(ListingTest, FolderPrefixEndsInOneSlash) {
  EXPECT_EQ(FolderPrefix(""), "");
  EXPECT_EQ(FolderPrefix("data"), "data/");
  EXPECT_EQ(FolderPrefix("data/"), "data/");
}

TEST_F(ListingTest, ForEachPageVisitsEveryPageAndFoldersAreDetected) {
  for (int i = 0; i < 5; ++i) Put("dir/k" + std::to_string(i));
  ListOptions options;
  options.prefix = "dir/";
  options.max_keys = 2;
  int pages = 0;
  size_t objects = 0;
  ASSERT_TRUE(ForEachPage(store_, options, [&](const ListPage& page) {
                ++pages;
                objects += page.objects.size();
                return OkStatus();
              }).ok());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(objects, 5u);
  EXPECT_TRUE(IsNonEmptyFolder(store_, "dir").value_or(false));
  EXPECT_FALSE(IsNonEmptyFolder(store_, "dir/k1").value_or(true));
}

TEST_F(ListingTest, AFolderListsItsContentsInKeyOrderWithOrWithoutTheSlash) {
  for (const char* key : {"dir/b", "dir/a/x", "dir/c/y", "dir/c/z/w"}) Put(key);
  const std::vector<std::string> contents = {"dir/a/", "dir/b", "dir/c/"};
  EXPECT_EQ(Listed("dir/"), contents);
  EXPECT_EQ(Listed("dir"), contents);
  EXPECT_EQ(Listed("dir", true), (std::vector<std::string>{"dir/a/x", "dir/b", "dir/c/y", "dir/c/z/w"}));
  EXPECT_EQ(Listed("", false), (std::vector<std::string>{"dir/"}));
}

TEST_F(ListingTest, AnObjectListsAsItself) {
  Put("t1");
  Put("t10/x");  // a name that only starts like it is neither the object nor its folder
  EXPECT_EQ(Listed("t1"), std::vector<std::string>{"t1"});
  EXPECT_EQ(Listed("t1", true), std::vector<std::string>{"t1"});
}

TEST_F(ListingTest, ANameThatIsBothAnObjectAndAFolderListsBoth) {
  Put("t1");
  Put("t1/x");
  Put("t1/sub/y");
  EXPECT_EQ(Listed("t1"), (std::vector<std::string>{"t1", "t1/"}));
  EXPECT_EQ(Listed("t1", true), (std::vector<std::string>{"t1", "t1/sub/y", "t1/x"}));
  EXPECT_EQ(Listed("t1/"), (std::vector<std::string>{"t1/sub/", "t1/x"}));
}

TEST_F(ListingTest, NothingIsVisitedForAMissingName) {
  Put("other");
  EXPECT_TRUE(Listed("missing").empty());
  EXPECT_TRUE(Listed("missing/", true).empty());
}

TEST_F(ListingTest, ErrorsOfTheVisitorStopTheListing) {
  Put("d/a");
  Put("d/b");
  int visited = 0;
  Status status = ListNamed(store_, "d/", false, [&](const ObjectInfo&, bool) {
    ++visited;
    return CancelledError("stop");
  });
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_EQ(visited, 1);
}

}  // namespace
}  // namespace spool
