// Behaviour of the in-memory store beyond the conformance suite.
#include "spool/core/storage/memory_store.h"

#include <gtest/gtest.h>

#include "spool/core/crc32c.h"
#include "spool/core/storage/registry.h"

namespace spool {
namespace {

TEST(MemoryStoreTest, StoresOfOneBucketShareObjects) {
  MemoryStore::ClearBucket("shared-bucket");
  MemoryStore first("shared-bucket");
  MemoryStore second("shared-bucket");
  MemoryStore other("other-bucket");
  ASSERT_TRUE(WriteAll(first, "k", "value").ok());
  EXPECT_EQ(ReadAll(second, "k").value_or(""), "value");
  EXPECT_EQ(other.Stat("k").status().code(), StatusCode::kNotFound);

  Result<StoreLocation> location = OpenLocation("mem://shared-bucket/k");
  ASSERT_TRUE(location.ok()) << location.status().ToString();
  EXPECT_EQ(ReadAll(*location->store, location->key).value_or(""), "value");
}

// A writer without buffers of its own offers no room: callers fall back to
// Append (UploadFile does), and a commit without room is refused.
TEST(MemoryStoreTest, WriterOffersNoAppendSpace) {
  MemoryStore store("append-space-bucket");
  auto writer = store.OpenWrite("k", {});
  ASSERT_TRUE(writer.ok());
  auto room = (*writer)->AppendSpace(1024);
  ASSERT_TRUE(room.ok());
  EXPECT_TRUE(room->empty());
  EXPECT_TRUE((*writer)->CommitAppend(0).ok());
  EXPECT_EQ((*writer)->CommitAppend(1).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*writer)->Append("value").ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(ReadAll(store, "k").value_or(""), "value");
}

TEST(MemoryStoreTest, ClearBucketRemovesEveryObject) {
  MemoryStore store("cleared-bucket");
  ASSERT_TRUE(WriteAll(store, "a", "1").ok());
  ASSERT_TRUE(WriteAll(store, "b/c", "2").ok());
  MemoryStore::ClearBucket("cleared-bucket");
  Result<ListPage> listed = ListAll(store, {});
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->objects.empty());
}

TEST(MemoryStoreTest, KeepsCrc32cAndCountsVersions) {
  MemoryStore store("versions-bucket");
  Result<ObjectInfo> first = WriteAll(store, "k", "one");
  Result<ObjectInfo> second = WriteAll(store, "k", "two");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first->version, second->version);
  Result<ObjectInfo> stat = store.Stat("k");
  ASSERT_TRUE(stat.ok());
  ASSERT_TRUE(stat->crc32c.has_value());
  EXPECT_EQ(*stat->crc32c, crc32c::Value("two"));
  EXPECT_EQ(store.Describe("k"), "mem://versions-bucket/k");
}

TEST(MemoryStoreTest, ReadOfADeletedObjectFails) {
  MemoryStore store("deleted-bucket");
  ASSERT_TRUE(WriteAll(store, "k", "content").ok());
  Result<std::unique_ptr<ReadableObject>> opened = store.OpenRead("k");
  ASSERT_TRUE(opened.ok());
  ASSERT_TRUE(store.Delete("k").ok());
  char buffer[4];
  EXPECT_EQ((*opened)->ReadAt(0, buffer).status().code(), StatusCode::kFailedPrecondition);
}

TEST(MemoryStoreTest, ServerSideCopy) {
  MemoryStore store("copy-bucket");
  ASSERT_TRUE(WriteAll(store, "from", "payload").ok());
  Result<ObjectInfo> copied = store.Copy("from", "to");
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(copied->key, "to");
  EXPECT_EQ(ReadAll(store, "to").value_or(""), "payload");
  EXPECT_EQ(store.Copy("missing", "x").status().code(), StatusCode::kNotFound);
}

TEST(MemoryStoreTest, RejectsEmptyKeys) {
  MemoryStore store("empty-key-bucket");
  EXPECT_EQ(store.OpenWrite("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Stat("").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace spool
