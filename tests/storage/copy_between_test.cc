// CopyObjectBetween: which way an object is copied for each pair of ends.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "spool/core/storage/transfer.h"

namespace spool {
namespace {

namespace fs = std::filesystem;

// Counts server-side copies; `has_copy` false makes it a store without one.
class CountingStore : public MemoryStore {
 public:
  CountingStore(std::string bucket, bool has_copy) : MemoryStore(std::move(bucket)), has_copy_(has_copy) {}
  Result<ObjectInfo> Copy(std::string_view from_key, std::string_view to_key) override {
    ++copies;
    if (!has_copy_) return UnimplementedError("no server-side copy here");
    return MemoryStore::Copy(from_key, to_key);
  }
  std::atomic<int> copies{0};

 private:
  bool has_copy_;
};

class CopyObjectBetweenTest : public ::testing::Test {
 protected:
  CopyObjectBetweenTest() {
    MemoryStore::ClearBucket("copy-between-a");
    MemoryStore::ClearBucket("copy-between-b");
    std::string pattern = (fs::temp_directory_path() / "spool-copy-between-XXXXXX").string();
    folder_ = mkdtemp(pattern.data());
  }
  ~CopyObjectBetweenTest() override { fs::remove_all(folder_); }
  // The LocalStore key of a file in the test folder.
  std::string LocalKey(std::string_view name) const { return (folder_ / name).string().substr(1); }

  fs::path folder_;
  LocalStore local_;
};

TEST_F(CopyObjectBetweenTest, WithinAStoreCopiesOnTheServer) {
  CountingStore store("copy-between-a", /*has_copy=*/true);
  ASSERT_TRUE(WriteAll(store, "src", "payload").ok());
  uint64_t progress = 0;
  TransferOptions options;
  options.on_progress = [&progress](uint64_t bytes) { progress += bytes; };
  Result<ObjectInfo> copied = CopyObjectBetween({&store, "src"}, {&store, "dst"}, options);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(store.copies, 1);
  EXPECT_EQ(progress, 7u);
  EXPECT_EQ(ReadAll(store, "dst").value(), "payload");
}

TEST_F(CopyObjectBetweenTest, AStoreWithoutServerSideCopyStreams) {
  CountingStore store("copy-between-a", /*has_copy=*/false);
  ASSERT_TRUE(WriteAll(store, "src", "payload").ok());
  Result<ObjectInfo> copied = CopyObjectBetween({&store, "src"}, {&store, "dst"});
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(store.copies, 1);
  EXPECT_EQ(ReadAll(store, "dst").value(), "payload");
}

TEST_F(CopyObjectBetweenTest, BetweenStoresStreams) {
  CountingStore from("copy-between-a", true), to("copy-between-b", true);
  ASSERT_TRUE(WriteAll(from, "src", "payload").ok());
  ASSERT_TRUE(CopyObjectBetween({&from, "src"}, {&to, "dst"}).ok());
  EXPECT_EQ(from.copies + to.copies, 0);
  EXPECT_EQ(ReadAll(to, "dst").value(), "payload");
}

TEST_F(CopyObjectBetweenTest, LocalEndsUploadAndDownloadFiles) {
  MemoryStore store("copy-between-a");
  {
    std::ofstream(folder_ / "in.bin", std::ios::binary) << "file bytes";
  }
  ASSERT_TRUE(CopyObjectBetween({&local_, LocalKey("in.bin"), true}, {&store, "obj"}).ok());
  EXPECT_EQ(ReadAll(store, "obj").value(), "file bytes");

  Result<ObjectInfo> downloaded = CopyObjectBetween({&store, "obj"}, {&local_, LocalKey("out/copy.bin"), true});
  ASSERT_TRUE(downloaded.ok()) << downloaded.status().ToString();
  std::ifstream in(folder_ / "out" / "copy.bin", std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "file bytes");
}

TEST_F(CopyObjectBetweenTest, TheSameObjectIsRefused) {
  MemoryStore store("copy-between-a");
  ASSERT_TRUE(WriteAll(store, "src", "payload").ok());
  Result<ObjectInfo> same = CopyObjectBetween({&store, "src"}, {&store, "src"});
  EXPECT_EQ(same.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadAll(store, "src").value(), "payload");
}

}  // namespace
}  // namespace spool
