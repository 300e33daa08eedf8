// GCS-specific behaviour of GcsStore on the local server: generation
// pinning, pagination, create-only writes, CRC32C checks, and recovery from
// injected faults.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "spool/core/crc32c.h"
#include "spool/core/executor.h"
#include "spool/core/storage/transfer.h"
#include "tests/gcs/test_server.h"
#include "tests/support/temp_dir.h"

namespace spool::gcs {
namespace {

using testing::ArmFault;
using testing::OpenStore;
using testing::Pattern;
using testing::UniqueName;

class GcsStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GcsStoreOptions options;
    options.resumable_threshold = 1 << 20;
    options.chunk_size = 256 << 10;
    options.reads.part_size = 256 << 10;
    options.retry.policy.initial_backoff = std::chrono::milliseconds(10);
    bucket_ = UniqueName("store");
    store_ = OpenStore(bucket_, options);
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override { testing::ClearFaults("/b/" + bucket_ + "/"); }

  // A store of the same bucket, with 256 KiB read parts, that counts its
  // requests into `counters_`.
  std::shared_ptr<GcsStore> CountingStore() {
    GcsStoreOptions options;
    options.reads.part_size = 256 << 10;
    options.counters = counters_;
    return OpenStore(bucket_, options);
  }
  uint64_t Requests(RequestOp op) const { return counters_->Snapshot().op(op).requests; }

  std::string bucket_;
  std::shared_ptr<GcsStore> store_;
  std::shared_ptr<RequestCounters> counters_ = std::make_shared<RequestCounters>();
};

TEST_F(GcsStoreTest, ReadsArePinnedToTheGenerationSeenAtOpen) {
  ASSERT_TRUE(WriteAll(*store_, "k", "first version").ok());
  auto reader = store_->OpenRead("k");
  ASSERT_TRUE(reader.ok());
  const std::string first_generation = (*reader)->info().version;
  char buffer[5];
  ASSERT_EQ(*(*reader)->ReadAt(0, buffer), 5u);
  EXPECT_EQ(std::string(buffer, 5), "first");

  ASSERT_TRUE(WriteAll(*store_, "k", "second version").ok());
  auto after = (*reader)->ReadAt(6, buffer);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(after.status().message().find("gs://" + bucket_ + "/k changed since it was opened"), std::string::npos)
      << after.status().ToString();
  auto info = store_->Stat("k");
  ASSERT_TRUE(info.ok());
  EXPECT_NE(info->version, first_generation);
}

// A read is split into parts once: a download and a ReadAt of the whole
// object each send one ranged GET per part of the store's part size. 6 MiB
// parts do not divide the 16 MiB pieces transfers used to read in, which
// the reader then split again (8 GETs for 40 MiB instead of 7).
TEST(GcsRangedReads, DownloadAndReadAtSendOneGetPerPart) {
  GcsStoreOptions options;
  options.reads.part_size = 6 << 20;
  options.counters = std::make_shared<RequestCounters>();
  auto store = OpenStore(UniqueName("one-split"), options);
  ASSERT_NE(store, nullptr);
  const std::string data = Pattern(0, 40 << 20);
  ASSERT_TRUE(WriteAll(*store, "forty", data).ok());
  const uint64_t parts = (data.size() + options.reads.part_size - 1) / options.reads.part_size;
  auto gets = [&] {
    RequestCounts counts = options.counters->Snapshot();
    return counts.op(RequestOp::kGet).requests + counts.op(RequestOp::kRangedGet).requests;
  };

  test_support::TempDir dir("spool-gcs-one-split");
  uint64_t before = gets();
  auto downloaded = DownloadFile(*store, "forty", dir / "forty");
  ASSERT_TRUE(downloaded.ok()) << downloaded.status().ToString();
  EXPECT_EQ(gets() - before, parts);

  auto reader = store->OpenRead("forty");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string back(data.size(), '\0');
  before = gets();
  auto read = (*reader)->ReadAt(0, back);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(gets() - before, parts);
  EXPECT_TRUE(back == data);
}

// cp -r opens what it listed, and the loader what a dataset manifest said:
// an object of at most one part is then one download and no metadata
// request. The listing's generation pins the read; without one (a
// manifest gives the size), the size does: rewritten longer or shorter is
// FailedPrecondition, deleted is NotFound. An empty object is opened with a
// metadata request, since reading it makes none that would see it gone.
TEST_F(GcsStoreTest, OpenedFromAListingOrItsSizeASmallObjectIsOneDownload) {
  auto store = CountingStore();
  ASSERT_NE(store, nullptr);
  const std::string data = Pattern(3, 100 << 10);
  ASSERT_TRUE(WriteAll(*store, "small", data).ok());
  ListOptions list;
  list.prefix = "small";
  auto listed = ListAll(*store, list);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->objects.size(), 1u);

  const uint64_t heads = Requests(RequestOp::kHead);
  const uint64_t gets = Requests(RequestOp::kGet) + Requests(RequestOp::kRangedGet);
  auto reader = store->OpenListed(listed->objects[0]);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string back(data.size(), '\0');
  ASSERT_TRUE((*reader)->ReadAt(0, back).ok());
  EXPECT_TRUE(back == data);
  EXPECT_EQ(Requests(RequestOp::kHead), heads);
  EXPECT_EQ(Requests(RequestOp::kGet) + Requests(RequestOp::kRangedGet), gets + 1);

  ObjectInfo known;  // as from a manifest: the key and the size
  known.key = "small";
  known.size = data.size();
  auto from_size = store->OpenListed(known);
  ASSERT_TRUE(from_size.ok()) << from_size.status().ToString();
  ASSERT_TRUE((*from_size)->ReadAt(0, back).ok());
  EXPECT_TRUE(back == data);
  EXPECT_EQ(Requests(RequestOp::kHead), heads);

  // Both readers are pinned to the generation they read, so a rewrite of
  // the same size is a change (412); a reader opened from the size after a
  // rewrite of another size sees the size.
  ASSERT_TRUE(WriteAll(*store, "small", Pattern(9, data.size())).ok());
  auto same_size = (*from_size)->ReadAt(0, back);
  EXPECT_EQ(same_size.status().code(), StatusCode::kFailedPrecondition) << same_size.status().ToString();
  EXPECT_EQ(same_size.status().remote().http_status, 412) << same_size.status().ToString();
  EXPECT_EQ((*reader)->ReadAt(0, back).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(WriteAll(*store, "small", data + "more").ok());
  auto read_fresh = [&](uint64_t offset, std::span<char> out) -> Result<size_t> {
    SPOOL_ASSIGN_OR_RETURN(auto fresh, store->OpenListed(known));
    return fresh->ReadAt(offset, out);
  };
  auto longer = read_fresh(0, back);
  EXPECT_EQ(longer.status().code(), StatusCode::kFailedPrecondition) << longer.status().ToString();
  EXPECT_NE(
      longer.status().message().find("gs://" + bucket_ + "/small is " + std::to_string(data.size() + 4) + " bytes"),
      std::string::npos)
      << longer.status().ToString();
  ASSERT_TRUE(WriteAll(*store, "small", data.substr(0, 1000)).ok());
  EXPECT_EQ(read_fresh(0, back).status().code(), StatusCode::kFailedPrecondition);
  std::string tail(1000, '\0');
  auto past_its_end = read_fresh(50 << 10, tail);
  EXPECT_EQ(past_its_end.status().code(), StatusCode::kFailedPrecondition) << past_its_end.status().ToString();
  ASSERT_TRUE(store->Delete("small").ok());
  EXPECT_EQ(read_fresh(0, back).status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*reader)->ReadAt(0, back).status().code(), StatusCode::kNotFound) << "deleted, as on S3";

  ObjectInfo empty;
  empty.key = "small";
  EXPECT_EQ(store->OpenListed(empty).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Requests(RequestOp::kHead), heads + 1);
}

// An object of several parts is opened from what the listing said too (a
// listing carries its generation and CRC32C), or from a manifest's size and
// CRC32C, with no metadata request: its ranges are checked against that
// CRC32C. From its size alone it needs one, to learn the CRC32C.
TEST_F(GcsStoreTest, OpenedWithItsCrc32cALargeObjectNeedsNoMetadataRequest) {
  auto store = CountingStore();
  ASSERT_NE(store, nullptr);
  const std::string data = Pattern(4, (1 << 20) + 3);  // 5 parts
  ASSERT_TRUE(WriteAll(*store, "large", data).ok());
  ListOptions list;
  list.prefix = "large";
  auto listed = ListAll(*store, list);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->objects.size(), 1u);
  ASSERT_TRUE(listed->objects[0].crc32c.has_value());

  ObjectInfo known;  // as from a manifest
  known.key = "large";
  known.size = data.size();
  known.crc32c = crc32c::Value(data);
  const uint64_t heads = Requests(RequestOp::kHead);
  for (const ObjectInfo& info : {listed->objects[0], known}) {
    auto reader = store->OpenListed(info);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::string back(data.size(), '\0');
    auto read = (*reader)->ReadAt(0, back);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_TRUE(back == data);
  }
  EXPECT_EQ(Requests(RequestOp::kHead), heads);

  ObjectInfo wrong = known;
  wrong.crc32c = *known.crc32c ^ 1;
  auto mismatched = store->OpenListed(wrong);
  ASSERT_TRUE(mismatched.ok()) << mismatched.status().ToString();
  std::string back(data.size(), '\0');
  EXPECT_EQ((*mismatched)->ReadAt(0, back).status().code(), StatusCode::kDataLoss);

  ObjectInfo size_alone = known;
  size_alone.crc32c.reset();
  ASSERT_TRUE(store->OpenListed(size_alone).ok());
  EXPECT_EQ(Requests(RequestOp::kHead), heads + 1);
}

TEST_F(GcsStoreTest, PaginationOverManyObjectsReturnsEachKeyOnce) {
  constexpr int kObjects = 2500;
  TaskGroup group(DefaultExecutor());
  for (int i = 0; i < kObjects; ++i) {
    group.Submit([this, i] {
      char key[32];
      std::snprintf(key, sizeof key, "many/%05d", i);
      return WriteAll(*store_, key, std::to_string(i)).status();
    });
  }
  ASSERT_TRUE(group.Wait().ok());
  ASSERT_TRUE(WriteAll(*store_, "many/sub/x", "x").ok());

  std::vector<std::string> keys;
  ListOptions options;
  options.prefix = "many/";
  options.max_keys = 1000;
  int pages = 0;
  for (;;) {
    auto page = store_->List(options);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    ++pages;
    for (const auto& object : page->objects) keys.push_back(object.key);
    if (page->next_page_token.empty()) break;
    options.page_token = page->next_page_token;
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(keys.size(), size_t{kObjects + 1});
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size());

  ListOptions folders;
  folders.prefix = "many/";
  folders.delimiter = "/";
  auto all = ListAll(*store_, folders);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->objects.size(), size_t{kObjects});
  EXPECT_EQ(all->common_prefixes, std::vector<std::string>{"many/sub/"});
  EXPECT_EQ(all->objects[1234].size, 4u);  // "1234"
}

TEST_F(GcsStoreTest, CreateOnlyConflictIsAlreadyExistsForSmallAndResumableWrites) {
  WriteOptions create_only;
  create_only.if_not_exists = true;
  ASSERT_TRUE(WriteAll(*store_, "manifest.json", "{}", create_only).ok());
  auto again = WriteAll(*store_, "manifest.json", "{\"other\":1}", create_only);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status().ToString();
  EXPECT_NE(again.status().message().find("gs://" + bucket_ + "/manifest.json"), std::string::npos);

  const std::string large = Pattern(0, 3 << 20);  // above the resumable threshold
  ASSERT_TRUE(WriteAll(*store_, "big", large, create_only).ok());
  auto big_again = WriteAll(*store_, "big", large, create_only);
  ASSERT_FALSE(big_again.ok());
  EXPECT_EQ(big_again.status().code(), StatusCode::kAlreadyExists) << big_again.status().ToString();
  EXPECT_EQ(*ReadAll(*store_, "manifest.json"), "{}");
}

TEST_F(GcsStoreTest, UploadsCarryTheirCrc32c) {
  const std::string small = "hello, crc";
  auto info = WriteAll(*store_, "small", small);
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(info->crc32c.has_value());
  EXPECT_EQ(*info->crc32c, crc32c::Value(small));
  const std::string large = Pattern(8, (2 << 20) + 77);
  auto big = WriteAll(*store_, "large", large);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(*big->crc32c, crc32c::Value(large));
  EXPECT_EQ(*ReadAll(*store_, "large"), large);
}

TEST_F(GcsStoreTest, ACorruptedFullDownloadIsDataLoss) {
  const std::string data = Pattern(0, 100000);
  ASSERT_TRUE(WriteAll(*store_, "fragile", data).ok());
  ArmFault(R"({"kind":"corrupt","count":1,"match":"/b/)" + bucket_ + R"(/o/fragile?alt=media"})");
  auto read = ReadAll(*store_, "fragile");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
  EXPECT_EQ(*ReadAll(*store_, "fragile"), data);  // the fault was one-shot
}

TEST_F(GcsStoreTest, ServerErrorsAndDroppedDownloadsAreRetried) {
  const std::string data = Pattern(0, 3 << 20);
  ASSERT_TRUE(WriteAll(*store_, "flaky", data).ok());
  ArmFault(R"({"kind":"status","status":503,"count":2,"match":"/b/)" + bucket_ + R"(/o/flaky"})");
  EXPECT_TRUE(store_->Stat("flaky").ok());
  // A download that loses its connection resumes at the byte it reached.
  ArmFault(R"({"kind":"reset_after","phase":"response","bytes":100000,"count":3,"match":"/b/)" + bucket_ +
           R"(/o/flaky?alt=media"})");
  auto read = ReadAll(*store_, "flaky");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(*read == data);
  ArmFault(R"({"kind":"status","status":429,"count":2,"match":"/b/)" + bucket_ + R"(/o?"})");
  EXPECT_TRUE(store_->List(ListOptions{}).ok());
}

TEST_F(GcsStoreTest, AStalledAnswerIsAbandonedAndRetried) {
  GcsStoreOptions options;
  options.http.low_speed_time = std::chrono::seconds(1);  // stall detection
  options.retry.policy.initial_backoff = std::chrono::milliseconds(10);
  auto store = OpenStore(bucket_, options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(WriteAll(*store, "slow", "x").ok());
  ArmFault(R"({"kind":"stall","seconds":4,"count":1,"match":"/b/)" + bucket_ + R"(/o/slow"})");
  auto info = store->Stat("slow");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, 1u);
}

TEST_F(GcsStoreTest, AnUnconditionalSmallWriteThatFailedIsRetriedSafely) {
  ArmFault(R"({"kind":"status","status":503,"count":1,"match":"/b/)" + bucket_ + R"(/o?uploadType=multipart"})");
  auto info = WriteAll(*store_, "retried", "payload");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(*ReadAll(*store_, "retried"), "payload");
}

TEST_F(GcsStoreTest, ResumableChunksSurviveServerErrors) {
  ArmFault(R"({"kind":"status","status":503,"count":2,"method":"PUT","match":"/b/)" + bucket_ +
           R"(/o?uploadType=resumable"})");
  const std::string data = Pattern(0, (3 << 20) + 5);
  auto info = WriteAll(*store_, "chunked", data);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(*ReadAll(*store_, "chunked") == data);
}

TEST_F(GcsStoreTest, AbortedResumableWriteLeavesNothing) {
  auto writer = store_->OpenWrite("never");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append(Pattern(0, 2 << 20)).ok());
  (*writer)->Abort();
  EXPECT_EQ(store_->Stat("never").status().code(), StatusCode::kNotFound);
}

TEST_F(GcsStoreTest, CopyRewritesInSeveralCalls) {
  const std::string data = Pattern(0, 5 << 20);
  ASSERT_TRUE(WriteAll(*store_, "src", data).ok());
  auto copied = store_->Copy("src", "dst");
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(copied->size, data.size());
  EXPECT_EQ(*copied->crc32c, crc32c::Value(data));
  EXPECT_TRUE(*ReadAll(*store_, "dst") == data);
  EXPECT_EQ(store_->Copy("missing", "x").status().code(), StatusCode::kNotFound);
}

TEST_F(GcsStoreTest, ADeleteWhoseAnswerWasLostIsRetriedUnderAPrecondition) {
  ASSERT_TRUE(WriteAll(*store_, "gone", "x").ok());
  ArmFault(R"({"kind":"status","status":503,"count":1,"method":"DELETE","match":"/b/)" + bucket_ + R"(/o/gone"})");
  EXPECT_TRUE(store_->Delete("gone").ok());
  EXPECT_EQ(store_->Stat("gone").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->Delete("gone").ok());  // deleting what is not there is fine
}

TEST_F(GcsStoreTest, DeleteManyInParallel) {
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) {
    keys.push_back("del/" + std::to_string(i));
    ASSERT_TRUE(WriteAll(*store_, keys.back(), "x").ok());
  }
  keys.push_back("del/not-there");
  auto failures = store_->DeleteMany(keys);
  ASSERT_TRUE(failures.ok());
  EXPECT_TRUE(failures->empty());
  ListOptions options;
  options.prefix = "del/";
  EXPECT_TRUE(ListAll(*store_, options)->objects.empty());
}

}  // namespace
}  // namespace spool::gcs
