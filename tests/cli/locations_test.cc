#include "cli/commands/locations.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "spool/core/storage/memory_store.h"
#include "tests/support/temp_dir.h"

namespace spool::cli {
namespace {

namespace fs = std::filesystem;

TEST(LocationsTest, BaseName) {
  EXPECT_EQ(BaseName("a/b/c.txt"), "c.txt");
  EXPECT_EQ(BaseName("a/b/"), "b");
  EXPECT_EQ(BaseName("top"), "top");
}

// Where the objects of a folder land when cp -r and sync mirror it.
class FolderMirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryStore::ClearBucket("cli-mirror");
    Result<StoreLocation> local = OpenLocation((temp_.path() / "dst").string());
    ASSERT_TRUE(local.ok()) << local.status().ToString();
    local_ = *local;
    Result<StoreLocation> objects = OpenLocation("mem://cli-mirror-copies/copy");
    ASSERT_TRUE(objects.ok()) << objects.status().ToString();
    objects_ = *objects;
  }

  static ObjectInfo Object(std::string key, uint64_t size = 1) {
    ObjectInfo info;
    info.key = std::move(key);
    info.size = size;
    return info;
  }

  MemoryStore source_{"cli-mirror"};
  test_support::TempDir temp_{"spool-cli-mirror"};
  StoreLocation local_;
  StoreLocation objects_;
};

TEST_F(FolderMirrorTest, FolderMarkersBecomeLocalFoldersAndStayObjectsElsewhere) {
  FolderMirror to_local(source_, "src/", local_);
  Result<Placement> marker = to_local.Place(Object("src/images/", 0));
  ASSERT_TRUE(marker.ok()) << marker.status().ToString();
  EXPECT_TRUE(marker->make_folder);
  EXPECT_EQ(marker->relative, "images");
  EXPECT_EQ(marker->key, local_.key + "/images");
  Result<Placement> own = to_local.Place(Object("src/", 0));
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->relative, "") << "the source folder's own marker: nothing to do";

  FolderMirror to_objects(source_, "src/", objects_);
  marker = to_objects.Place(Object("src/images/", 0));
  ASSERT_TRUE(marker.ok()) << marker.status().ToString();
  EXPECT_FALSE(marker->make_folder);
  EXPECT_EQ(marker->key, "copy/images/");
  EXPECT_EQ(to_objects.Place(Object("src/", 0))->relative, "");
}

TEST_F(FolderMirrorTest, EmptyAndDotSegmentsAreDroppedOnlyForLocalFiles) {
  FolderMirror to_local(source_, "src/", local_);
  EXPECT_EQ(to_local.Place(Object("src/a//b"))->relative, "a/b");
  EXPECT_EQ(to_local.Place(Object("src/c/./d"))->relative, "c/d");
  EXPECT_EQ(to_local.Place(Object("src//x"))->relative, "x");
  EXPECT_EQ(to_local.Place(Object("src/..hidden/x..y"))->relative, "..hidden/x..y");

  FolderMirror to_objects(source_, "src/", objects_);
  EXPECT_EQ(to_objects.Place(Object("src/a//b"))->key, "copy/a//b");
  EXPECT_EQ(to_objects.Place(Object("src//x"))->key, "copy//x");
}

TEST_F(FolderMirrorTest, NamesThatCouldClimbOutAreRefusedSayingWhy) {
  for (const StoreLocation* destination : {&local_, &objects_}) {
    FolderMirror mirror(source_, "src/", *destination);
    for (const char* key : {"src/../x", "src/a/../../x", "src/..", "src/a/.."}) {
      Result<Placement> placed = mirror.Place(Object(key));
      ASSERT_FALSE(placed.ok()) << key;
      EXPECT_EQ(placed.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(placed.status().message().find("mem://cli-mirror/" + std::string(key)), std::string::npos)
          << placed.status().message();
      EXPECT_NE(placed.status().message().find("'..' segment"), std::string::npos) << placed.status().message();
    }
  }
}

TEST_F(FolderMirrorTest, AFolderNameWithBytesCannotBeALocalFile) {
  FolderMirror to_local(source_, "src/", local_);
  Result<Placement> placed = to_local.Place(Object("src/full/", 4));
  ASSERT_FALSE(placed.ok());
  EXPECT_NE(placed.status().message().find("holds 4 bytes"), std::string::npos) << placed.status().message();
  FolderMirror to_objects(source_, "src/", objects_);
  EXPECT_EQ(to_objects.Place(Object("src/full/", 4))->key, "copy/full/");
}

TEST_F(FolderMirrorTest, AChangedNameNeverTakesAnotherObjectsPath) {
  ASSERT_TRUE(WriteAll(source_, "src/p/q", "plain").ok());
  FolderMirror to_local(source_, "src/", local_);
  Result<Placement> changed = to_local.Place(Object("src/p//q"));  // listed first: '/' < 'q'
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("the path of mem://cli-mirror/src/p/q"), std::string::npos)
      << changed.status().message();
  EXPECT_TRUE(to_local.Place(Object("src/p/q")).ok()) << "the plain name keeps its path";

  EXPECT_TRUE(to_local.Place(Object("src/r//s")).ok());
  Result<Placement> second = to_local.Place(Object("src/r/./s"));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("mem://cli-mirror/src/r//s"), std::string::npos) << second.status().message();
}

TEST_F(FolderMirrorTest, NeverWritesThroughASymbolicLinkInTheDestination) {
  fs::create_directories(temp_.path() / "dst");
  fs::create_directories(temp_.path() / "outside");
  fs::create_directory_symlink(temp_.path() / "outside", temp_.path() / "dst/link");
  FolderMirror to_local(source_, "src/", local_);
  Result<Placement> placed = to_local.Place(Object("src/link/file"));
  ASSERT_FALSE(placed.ok());
  EXPECT_NE(placed.status().message().find("symbolic link"), std::string::npos) << placed.status().message();
}

}  // namespace
}  // namespace spool::cli
