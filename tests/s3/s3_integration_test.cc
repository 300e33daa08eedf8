// S3-specific behaviour of S3Store and S3Client on the fixture's server (the
// local Ceph RGW, or moto: SPOOL_S3_TEST_SERVER): multipart with parallel
// parts, parallel ranged reads, batch delete, aborted uploads, error
// messages, presigned URLs and payload signing modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <tuple>

#include "spool/core/bytes.h"
#include "spool/core/crc32c.h"
#include "spool/core/storage/transfer.h"
#include "spool/s3/credential_providers.h"
#include "spool/s3/s3_store.h"
#include "tests/s3/s3_test_store.h"
#include "tests/support/bytes.h"
#include "tests/support/temp_dir.h"

namespace spool::s3 {
namespace {

using test_support::DeterministicBytes;
using testing::OpenTestStore;
using testing::TestBucket;
using testing::TestServer;
using testing::UniquePrefix;

// A transport that counts the requests in flight, to show they overlap. With
// `hold_puts_until_overlap`, a PUT waits (up to 10 s, once) until two requests
// have been in flight at once: whether upload parts overlap then depends on the
// writer's design, not on whether the test thread fills parts faster than the
// server takes them (under ThreadSanitizer it does not).
class CountingTransport : public HttpTransport {
 public:
  explicit CountingTransport(std::shared_ptr<HttpTransport> inner, bool hold_puts_until_overlap = false)
      : inner_(std::move(inner)), hold_puts_until_overlap_(hold_puts_until_overlap) {}
  Result<HttpResponse> Send(const HttpRequest& request, ResponseSink* sink) override {
    const int now = ++in_flight_;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    {
      std::unique_lock lock(mu_);
      methods_.push_back(request.method);
      if (now >= 2) overlapped_.notify_all();
      if (hold_puts_until_overlap_ && request.method == "PUT" && !stopped_holding_) {
        // One hold that times out shows the parts do not overlap; holding
        // every later part too would only make the failing test slow.
        stopped_holding_ = !overlapped_.wait_for(lock, std::chrono::seconds(10), [&] { return max_in_flight_ >= 2; });
      }
    }
    auto response = inner_->Send(request, sink);
    --in_flight_;
    return response;
  }
  int max_in_flight() const { return max_in_flight_; }
  // The methods of the requests sent so far, in order.
  std::vector<std::string> methods() {
    std::lock_guard lock(mu_);
    return methods_;
  }

 private:
  std::shared_ptr<HttpTransport> inner_;
  const bool hold_puts_until_overlap_;
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  std::mutex mu_;
  std::condition_variable overlapped_;
  bool stopped_holding_ = false;  // guarded by mu_
  std::vector<std::string> methods_;
};

// A store whose requests go through `transport`, configured like the fixture's.
std::shared_ptr<S3Store> StoreWithTransport(std::shared_ptr<HttpTransport> transport, ByteBudget* budget,
                                            S3Options options = {}) {
  const Env env = CurrentEnv();
  auto config = ResolveConfig(options, TestBucket(), env);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  auto credentials = MakeDefaultChain(ChainOptions{}, env, MakeCurlTransport({}));
  auto client = std::make_shared<S3Client>(*config, TestBucket(), std::move(transport), std::move(credentials));
  return std::make_shared<S3Store>(std::move(client), nullptr, budget);
}

void DeletePrefix(ObjectStore& store, const std::string& prefix) {
  ListOptions options;
  options.prefix = prefix;
  auto listed = ListAll(store, options);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> keys;
  for (const ObjectInfo& object : listed->objects) keys.push_back(object.key);
  auto failures = store.DeleteMany(keys);
  ASSERT_TRUE(failures.ok()) << failures.status().ToString();
  EXPECT_TRUE(failures->empty());
}

int IncompleteUploads(S3Client& client, const std::string& prefix) {
  auto uploads = client.ListMultipartUploads(prefix, "", "");
  EXPECT_TRUE(uploads.ok()) << uploads.status().ToString();
  return uploads.ok() ? static_cast<int>(uploads->uploads.size()) : -1;
}

TEST(S3Store, Multipart200MiBWithParallelPartsReadsBackIdentical) {
  auto counting = std::make_shared<CountingTransport>(MakeCurlTransport({}), /*hold_puts_until_overlap=*/true);
  ByteBudget budget(512 * kMiB);
  auto store = StoreWithTransport(counting, &budget);
  const std::string key = UniquePrefix("multipart") + "200MiB";
  const std::string data = DeterministicBytes(200, 200 * kMiB);

  WriteOptions options;
  options.expected_size = data.size();
  auto writer = store->OpenWrite(key, options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (size_t offset = 0; offset < data.size(); offset += 3 * kMiB + 17) {  // odd-sized appends
    ASSERT_TRUE((*writer)->Append(std::string_view(data).substr(offset, 3 * kMiB + 17)).ok());
  }
  auto written = (*writer)->Close();
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->size, data.size());
  EXPECT_EQ(written->crc32c, crc32c::Value(data));
  // Several 8 MiB parts were buffered and uploaded at once.
  EXPECT_GE(budget.peak(), 2 * kDefaultPartSize);
  EXPECT_GE(counting->max_in_flight(), 2);
  EXPECT_EQ(budget.in_use(), 0u);

  auto info = store->Stat(key);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, data.size());
  EXPECT_EQ(info->version, written->version);
  EXPECT_NE(info->version.find("-25\""), std::string::npos) << info->version;  // 200 MiB / 8 MiB parts

  auto reader = store->OpenRead(key);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string back(data.size(), '\0');
  auto read = (*reader)->ReadAt(0, back);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, data.size());
  EXPECT_TRUE(back == data) << "the object read back differs from what was written";

  ASSERT_TRUE(store->Delete(key).ok());
}

// AppendSpace/CommitAppend fill the writer's own part buffers (what
// UploadFile reads a file into): the object is the bytes committed, in parts
// of the configured size, and a caller that stops at exactly one part still
// gets a single PUT.
TEST(S3Store, AppendSpaceFillsPartsInPlace) {
  S3Options options;
  options.part_size = 5 * kMiB;
  auto store = OpenTestStore(options);
  const std::string prefix = UniquePrefix("append-space");
  const std::string data = DeterministicBytes(13, 13 * kMiB + 5);

  auto writer = store->OpenWrite(prefix + "three-parts", {});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (size_t offset = 0; offset < data.size();) {
    auto room = (*writer)->AppendSpace(std::min<size_t>(3 * kMiB + 1, data.size() - offset));
    ASSERT_TRUE(room.ok()) << room.status().ToString();
    ASSERT_FALSE(room->empty()) << "the S3 writer offers its part buffer";
    const size_t n = room->size() / 2 + 1;  // fill less than offered
    std::memcpy(room->data(), data.data() + offset, n);
    ASSERT_TRUE((*writer)->CommitAppend(n).ok());
    offset += n;
  }
  EXPECT_EQ((*writer)->bytes_appended(), data.size());
  auto written = (*writer)->Close();
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->crc32c, crc32c::Value(data));
  EXPECT_NE(written->version.find("-3\""), std::string::npos) << written->version;  // 13 MiB in 5 MiB parts
  auto back = ReadAll(*store, prefix + "three-parts");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == data) << "the object read back differs from what was committed";

  auto single = store->OpenWrite(prefix + "one-part", {});
  ASSERT_TRUE(single.ok());
  auto room = (*single)->AppendSpace(5 * kMiB);
  ASSERT_TRUE(room.ok());
  ASSERT_EQ(room->size(), 5 * kMiB);
  std::memcpy(room->data(), data.data(), room->size());
  ASSERT_TRUE((*single)->CommitAppend(room->size()).ok());
  EXPECT_FALSE((*single)->CommitAppend(1).ok()) << "no room was given for it";
  auto one = (*single)->Close();
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->version.find('-'), std::string::npos) << "one part is a single PUT: " << one->version;
  auto one_back = ReadAll(*store, prefix + "one-part");
  ASSERT_TRUE(one_back.ok());
  EXPECT_TRUE(*one_back == data.substr(0, 5 * kMiB));
  DeletePrefix(*store, prefix);
}

// cp -r and sync open what they listed: a small object costs one GET, a
// large one a HEAD first (for the CRC32C its ranged reads are checked
// against), and a listing gone stale fails instead of mixing versions.
TEST(S3Store, OpenListedReadsASmallObjectWithOneGet) {
  auto store = OpenTestStore();
  const std::string prefix = UniquePrefix("listed");
  const std::string small = DeterministicBytes(7, 64 * 1024);
  const std::string large = DeterministicBytes(8, 6 * kMiB);
  ASSERT_TRUE(WriteAll(*store, prefix + "small", small).ok());
  ASSERT_TRUE(WriteAll(*store, prefix + "large", large).ok());
  ListOptions list;
  list.prefix = prefix;
  auto listed = ListAll(*store, list);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->objects.size(), 2u);

  auto counting = std::make_shared<CountingTransport>(MakeCurlTransport({}));
  S3Options options;
  options.part_size = 5 * kMiB;
  auto counted_store = StoreWithTransport(counting, nullptr, options);
  for (const ObjectInfo& info : listed->objects) {
    const std::string& expected = info.key.ends_with("small") ? small : large;
    const size_t before = counting->methods().size();
    auto reader = counted_store->OpenListed(info);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::string back(expected.size(), '\0');
    auto read = ReadParallel(**reader, 0, back);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_TRUE(back == expected) << info.key;
    const std::vector<std::string> all = counting->methods();
    const std::vector<std::string> methods(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
    if (&expected == &small) {
      EXPECT_EQ(methods, std::vector<std::string>{"GET"});
    } else {
      ASSERT_FALSE(methods.empty());
      EXPECT_EQ(methods.front(), "HEAD");
    }
  }

  const ObjectInfo& stale = listed->objects[0].key.ends_with("small") ? listed->objects[0] : listed->objects[1];
  ASSERT_TRUE(WriteAll(*store, stale.key, DeterministicBytes(9, stale.size)).ok());
  auto reader = counted_store->OpenListed(stale);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string back(stale.size, '\0');
  EXPECT_EQ((*reader)->ReadAt(0, back).status().code(), StatusCode::kFailedPrecondition);
  DeletePrefix(*store, prefix);
}

// A dataset manifest records a shard's CRC32C: opened with it, an object of
// more than one part needs no HEAD either (its ranged reads are checked
// against that CRC32C), pinned to its size, or to its ETag from a listing.
// A CRC32C that does not match fails the whole read.
TEST(S3Store, OpenedWithItsCrc32cALargeObjectNeedsNoHead) {
  auto store = OpenTestStore();
  const std::string key = UniquePrefix("known-crc") + "shard";
  const std::string data = DeterministicBytes(13, 12 * kMiB + 5);
  ASSERT_TRUE(WriteAll(*store, key, data).ok());
  auto counting = std::make_shared<CountingTransport>(MakeCurlTransport({}));
  S3Options options;
  options.part_size = 5 * kMiB;
  auto counted_store = StoreWithTransport(counting, nullptr, options);
  ObjectInfo known;  // as from a manifest
  known.key = key;
  known.size = data.size();
  known.crc32c = crc32c::Value(data);
  auto reader = counted_store->OpenListed(known);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string back(data.size(), '\0');
  auto read = (*reader)->ReadAt(0, back);  // whole: checked against the CRC32C given
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(back == data);
  const std::vector<std::string> methods = counting->methods();
  EXPECT_EQ(std::count(methods.begin(), methods.end(), "HEAD"), 0);
  EXPECT_EQ(std::count(methods.begin(), methods.end(), "GET"), 3) << "one ranged GET per 5 MiB part";

  ObjectInfo wrong = known;
  wrong.crc32c = *known.crc32c ^ 1;
  auto mismatched = counted_store->OpenListed(wrong);
  ASSERT_TRUE(mismatched.ok()) << mismatched.status().ToString();
  EXPECT_EQ((*mismatched)->ReadAt(0, back).status().code(), StatusCode::kDataLoss);

  ASSERT_TRUE(WriteAll(*store, key, DeterministicBytes(14, data.size() + 1)).ok());
  auto grown = (*reader)->ReadAt(0, std::span<char>(back).first(kMiB));
  EXPECT_EQ(grown.status().code(), StatusCode::kFailedPrecondition) << grown.status().ToString();
  ASSERT_TRUE(store->Delete(key).ok());
}

// A dataset manifest gives a shard's key and size, no ETag: opened from
// those, a small object is one GET and no HEAD, and on a real server the
// size pins the read (rewritten longer or shorter: FailedPrecondition;
// deleted: NotFound). An empty one is opened with a HEAD, since reading it
// makes no request that would see it gone.
TEST(S3Store, OpenedFromItsSizeAloneASmallObjectIsOneGetPinnedToTheSize) {
  auto store = OpenTestStore();
  const std::string key = UniquePrefix("known-size") + "shard";
  const std::string data = DeterministicBytes(11, 100 * 1024);
  ASSERT_TRUE(WriteAll(*store, key, data).ok());
  auto counting = std::make_shared<CountingTransport>(MakeCurlTransport({}));
  auto counted_store = StoreWithTransport(counting, nullptr, {});
  ObjectInfo known;
  known.key = key;
  known.size = data.size();
  auto reader = counted_store->OpenListed(known);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string back(data.size(), '\0');
  auto read = (*reader)->ReadAt(0, back);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(back == data);
  EXPECT_EQ(counting->methods(), std::vector<std::string>{"GET"});

  // The reader is pinned to the ETag it read (a rewrite of the same size is
  // a change); one opened from the size after a rewrite sees the size.
  ASSERT_TRUE(WriteAll(*store, key, DeterministicBytes(12, data.size())).ok());
  auto same_size = (*reader)->ReadAt(0, back);
  EXPECT_EQ(same_size.status().code(), StatusCode::kFailedPrecondition) << same_size.status().ToString();
  auto read_fresh = [&](uint64_t offset, std::span<char> out) -> Result<size_t> {
    SPOOL_ASSIGN_OR_RETURN(auto fresh, counted_store->OpenListed(known));
    return fresh->ReadAt(offset, out);
  };
  ASSERT_TRUE(WriteAll(*store, key, data + "more").ok());
  auto longer = read_fresh(0, back);
  EXPECT_EQ(longer.status().code(), StatusCode::kFailedPrecondition) << longer.status().ToString();
  EXPECT_NE(longer.status().message().find(" is " + std::to_string(data.size() + 4) + " bytes"), std::string::npos)
      << longer.status().ToString();
  ASSERT_TRUE(WriteAll(*store, key, data.substr(0, 1000)).ok());
  auto shorter = read_fresh(0, back);
  EXPECT_EQ(shorter.status().code(), StatusCode::kFailedPrecondition) << shorter.status().ToString();
  std::string tail(1000, '\0');
  auto past_its_end = read_fresh(50 * 1024, tail);
  EXPECT_EQ(past_its_end.status().code(), StatusCode::kFailedPrecondition) << past_its_end.status().ToString();
  ASSERT_TRUE(store->Delete(key).ok());
  EXPECT_EQ(read_fresh(0, back).status().code(), StatusCode::kNotFound);

  ObjectInfo empty;
  empty.key = key;
  const size_t before = counting->methods().size();
  EXPECT_EQ(counted_store->OpenListed(empty).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(counting->methods().at(before), "HEAD");
}

TEST(S3Store, LargeReadAtIsSplitIntoParallelRangedGets) {
  auto store = OpenTestStore();
  const std::string key = UniquePrefix("ranged") + "40MiB";
  const std::string data = DeterministicBytes(40, 40 * kMiB);
  ASSERT_TRUE(WriteAll(*store, key, data).ok());

  auto counting = std::make_shared<CountingTransport>(MakeCurlTransport({}));
  S3Options options;
  options.part_size = 5 * kMiB;
  options.concurrency = 4;
  auto counted_store = StoreWithTransport(counting, nullptr, options);
  auto reader = counted_store->OpenRead(key);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  // 30 MiB from an odd offset: six ranges or more, four at a time.
  std::string back(30 * kMiB, '\0');
  auto read = (*reader)->ReadAt(3 * kMiB + 5, back);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, back.size());
  EXPECT_TRUE(back == data.substr(3 * kMiB + 5, 30 * kMiB));
  EXPECT_GE(counting->max_in_flight(), 2);
  EXPECT_LE(counting->max_in_flight(), 4);
  // The tail: asking past the end returns only what exists.
  std::string tail(kMiB, '\0');
  auto short_read = (*reader)->ReadAt(data.size() - 100, tail);
  ASSERT_TRUE(short_read.ok());
  EXPECT_EQ(*short_read, 100u);
  EXPECT_EQ(tail.substr(0, 100), data.substr(data.size() - 100));
  // And through core's ReadParallel.
  std::string again(data.size(), '\0');
  TransferOptions transfer;
  transfer.part_size = 6 * kMiB;
  auto parallel = ReadParallel(**reader, 0, again, transfer);
  ASSERT_TRUE(parallel.ok()) << parallel.status().ToString();
  EXPECT_TRUE(again == data);
  ASSERT_TRUE(store->Delete(key).ok());
}

// A read is split into parts once: a download and a ReadAt of the whole
// object each send one ranged GET per part of the store's part size. 6 MiB
// parts do not divide the 16 MiB pieces transfers used to read in, which
// the reader then split again (8 GETs for 40 MiB instead of 7).
TEST(S3Store, DownloadAndReadAtSendOneGetPerPart) {
  auto store = OpenTestStore();
  const std::string key = UniquePrefix("one-split") + "40MiB";
  const std::string data = DeterministicBytes(40, 40 * kMiB);
  ASSERT_TRUE(WriteAll(*store, key, data).ok());

  auto counting = std::make_shared<CountingTransport>(MakeCurlTransport({}));
  S3Options options;
  options.part_size = 6 * kMiB;
  auto counted_store = StoreWithTransport(counting, nullptr, options);
  const size_t parts = (data.size() + options.part_size - 1) / options.part_size;
  auto gets = [&] {
    const std::vector<std::string> methods = counting->methods();
    return static_cast<size_t>(std::count(methods.begin(), methods.end(), "GET"));
  };

  test_support::TempDir dir("spool-s3-one-split");
  size_t before = gets();
  auto downloaded = DownloadFile(*counted_store, key, dir / "forty");
  ASSERT_TRUE(downloaded.ok()) << downloaded.status().ToString();
  EXPECT_EQ(gets() - before, parts);

  auto reader = counted_store->OpenRead(key);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string back(data.size(), '\0');
  before = gets();
  auto read = (*reader)->ReadAt(0, back);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(gets() - before, parts);
  EXPECT_TRUE(back == data);
  ASSERT_TRUE(store->Delete(key).ok());
}

TEST(S3Store, DeleteManyCrossesTheThousandKeyBatchLimit) {
  auto store = OpenTestStore();
  const std::string prefix = UniquePrefix("batch-delete");
  std::vector<std::string> keys;
  for (int i = 0; i < 1500; ++i) keys.push_back(prefix + "k" + std::to_string(i));
  {
    TaskGroup group(DefaultExecutor());
    for (const std::string& key : keys) {
      group.Submit([&store, key] { return WriteAll(*store, key, "x").status(); });
    }
    ASSERT_TRUE(group.Wait().ok());
  }
  auto failures = store->DeleteMany(keys);
  ASSERT_TRUE(failures.ok()) << failures.status().ToString();
  EXPECT_TRUE(failures->empty());
  ListOptions options;
  options.prefix = prefix;
  auto listed = ListAll(*store, options);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->objects.empty());
}

TEST(S3Store, ListPagesFollowContinuationTokens) {
  auto store = OpenTestStore();
  const std::string prefix = UniquePrefix("pages");
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(WriteAll(*store, prefix + "k" + std::to_string(100 + i), "x").ok());
  ListOptions options;
  options.prefix = prefix;
  options.max_keys = 10;
  std::vector<std::string> keys;
  int pages = 0;
  do {
    auto page = store->List(options);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const ObjectInfo& object : page->objects) keys.push_back(object.key);
    options.page_token = page->next_page_token;
    ++pages;
  } while (!options.page_token.empty());
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(keys.size(), 25u);
  EXPECT_EQ(keys.front(), prefix + "k100");
  EXPECT_EQ(keys.back(), prefix + "k124");
  DeletePrefix(*store, prefix);
}

TEST(S3Store, AbortAndDestructionLeaveNoUploadBehind) {
  S3Options options;
  options.part_size = 5 * kMiB;
  auto store = OpenTestStore(options);
  const std::string prefix = UniquePrefix("abort");
  const std::string data = DeterministicBytes(12, 12 * kMiB);  // two parts go up before the end
  {
    auto writer = store->OpenWrite(prefix + "aborted");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append(data).ok());
    EXPECT_EQ(IncompleteUploads(store->client(), prefix), 1);
    (*writer)->Abort();
  }
  EXPECT_EQ(IncompleteUploads(store->client(), prefix), 0);
  {
    auto writer = store->OpenWrite(prefix + "dropped");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append(data).ok());
  }  // destroyed without Close
  EXPECT_EQ(IncompleteUploads(store->client(), prefix), 0);
  EXPECT_EQ(store->Stat(prefix + "aborted").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Stat(prefix + "dropped").status().code(), StatusCode::kNotFound);
}

TEST(S3Store, AbortIncompleteUploadsRemovesLeftovers) {
  auto store = OpenTestStore();
  const std::string prefix = UniquePrefix("leftovers");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store->client().CreateMultipartUpload(prefix + "k" + std::to_string(i), {}).ok());
  }
  EXPECT_EQ(IncompleteUploads(store->client(), prefix), 3);
  auto listed = store->ListIncompleteUploads(prefix);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].key, prefix + "k0");
  EXPECT_FALSE((*listed)[0].id.empty());
  // moto answers ListMultipartUploads with one fixed <Initiated> for every
  // upload (2010-11-10T20:48:33Z), so there every upload looks old.
  if (TestServer() != "moto") {
    auto young = AbortIncompleteUploads(*store, prefix, std::chrono::hours(1));
    ASSERT_TRUE(young.ok()) << young.status().ToString();
    EXPECT_TRUE(young->empty());
  }
  auto dry_run = AbortIncompleteUploads(*store, prefix, std::chrono::seconds(0), /*dry_run=*/true);
  ASSERT_TRUE(dry_run.ok()) << dry_run.status().ToString();
  EXPECT_EQ(dry_run->size(), 3u);
  EXPECT_EQ(IncompleteUploads(store->client(), prefix), 3);
  auto aborted = AbortIncompleteUploads(*store, prefix, std::chrono::seconds(0));
  ASSERT_TRUE(aborted.ok()) << aborted.status().ToString();
  EXPECT_EQ(aborted->size(), 3u);
  EXPECT_EQ(IncompleteUploads(store->client(), prefix), 0);
  // Aborting one that is gone already is not an error.
  EXPECT_TRUE(store->AbortIncompleteUpload((*listed)[0]).ok());
}

// A multipart upload told its CRC32C up front stores it as user metadata, so
// a HEAD (and every later whole read) has one on a server that keeps no
// checksum; bytes that do not match it are never committed.
TEST(S3Store, DeclaredCrc32cIsStoredAndEnforced) {
  auto store = OpenTestStore();
  const std::string prefix = UniquePrefix("declared-crc");
  const std::string data = DeterministicBytes(20, 20 * kMiB);
  WriteOptions options;
  options.expected_size = data.size();
  options.crc32c = crc32c::Value(data);
  auto writer = store->OpenWrite(prefix + "good", options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append(data).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto info = store->Stat(prefix + "good");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->crc32c, crc32c::Value(data));
  // Neither Ceph RGW nor moto keeps a full-object checksum of a multipart
  // upload that asked for none: the CRC32C is the one the uploader stored.
  EXPECT_TRUE(info->crc32c_from_uploader);

  options.crc32c = crc32c::Value(data) ^ 1;
  auto liar = store->OpenWrite(prefix + "bad", options);
  ASSERT_TRUE(liar.ok()) << liar.status().ToString();
  ASSERT_TRUE((*liar)->Append(data).ok());
  auto closed = (*liar)->Close();
  EXPECT_EQ(closed.status().code(), StatusCode::kDataLoss) << closed.status().ToString();
  EXPECT_EQ(store->Stat(prefix + "bad").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(IncompleteUploads(store->client(), prefix), 0);
}

TEST(S3Store, WrongSecretIsUnauthenticatedNamingEndpointBucketAndKeyId) {
  if (TestServer() == "moto") GTEST_SKIP() << "moto checks no signatures: it accepts any secret";
  const Env env = CurrentEnv();
  std::map<std::string, std::string> variables{{"AWS_ENDPOINT_URL", env.Get("AWS_ENDPOINT_URL").value_or("")},
                                               {"AWS_ACCESS_KEY_ID", env.Get("AWS_ACCESS_KEY_ID").value_or("")},
                                               {"AWS_SECRET_ACCESS_KEY", "not-the-right-secret-0123456789"},
                                               {"AWS_EC2_METADATA_DISABLED", "true"},
                                               {"AWS_CONFIG_FILE", "/dev/null"},
                                               {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"}};
  auto store = S3Store::Open(TestBucket(), {}, Env::Fixed(variables));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto stat = (*store)->List({});
  ASSERT_FALSE(stat.ok());
  const Status& status = stat.status();
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated);
  const std::string line = status.ToString();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  for (const std::string& part : {variables["AWS_ENDPOINT_URL"], "s3://" + TestBucket(),
                                  variables["AWS_ACCESS_KEY_ID"], std::string("SignatureDoesNotMatch")}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing from: " << line;
  }
  EXPECT_EQ(line.find("not-the-right-secret"), std::string::npos) << line;
}

// A key the server does not know, and a wrong secret, on Stat (a HEAD, whose
// answer has no body) as on List: Unauthenticated, never NotFound, though
// the object asked for does not exist either.
TEST(S3Store, RefusedKeysAreUnauthenticatedOnStatAndList) {
  if (TestServer() == "moto") GTEST_SKIP() << "moto checks no signatures: it accepts any key";
  const Env env = CurrentEnv();
  for (const auto& [key_id, secret, code] :
       {std::tuple<std::string, std::string, std::string>{"AKIDNOBODYKNOWS00001", "any-secret-0123456789",
                                                          "InvalidAccessKeyId"},
        {env.Get("AWS_ACCESS_KEY_ID").value_or(""), "not-the-right-secret-0123456789", "SignatureDoesNotMatch"}}) {
    std::map<std::string, std::string> variables{{"AWS_ENDPOINT_URL", env.Get("AWS_ENDPOINT_URL").value_or("")},
                                                 {"AWS_ACCESS_KEY_ID", key_id},
                                                 {"AWS_SECRET_ACCESS_KEY", secret},
                                                 {"AWS_EC2_METADATA_DISABLED", "true"},
                                                 {"AWS_CONFIG_FILE", "/dev/null"},
                                                 {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"}};
    auto store = S3Store::Open(TestBucket(), {}, Env::Fixed(variables));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto stat = (*store)->Stat(UniquePrefix("refused") + "no-such-object");
    EXPECT_EQ(stat.status().code(), StatusCode::kUnauthenticated) << stat.status().ToString();
    EXPECT_EQ(stat.status().remote().service_code, code) << stat.status().ToString();
    auto list = (*store)->List({});
    EXPECT_EQ(list.status().code(), StatusCode::kUnauthenticated) << list.status().ToString();
    EXPECT_EQ(list.status().remote().service_code, code) << list.status().ToString();
  }
}

TEST(S3Store, MissingBucketAndKeyAreNotFound) {
  auto store = OpenTestStore();
  auto missing_key = store->Stat(UniquePrefix("missing") + "nothing-here");
  EXPECT_EQ(missing_key.status().code(), StatusCode::kNotFound) << missing_key.status().ToString();
  auto missing_read = store->OpenRead(UniquePrefix("missing") + "nothing-here");
  EXPECT_EQ(missing_read.status().code(), StatusCode::kNotFound);

  auto no_bucket = S3Store::Open("spool-no-such-bucket", {});
  ASSERT_TRUE(no_bucket.ok());
  auto listed = (*no_bucket)->List({});
  EXPECT_EQ(listed.status().code(), StatusCode::kNotFound) << listed.status().ToString();
  EXPECT_NE(listed.status().message().find("NoSuchBucket"), std::string::npos) << listed.status().ToString();
  auto stat = (*no_bucket)->Stat("key");
  EXPECT_EQ(stat.status().code(), StatusCode::kNotFound) << stat.status().ToString();
  auto write = WriteAll(**no_bucket, "key", "data");
  EXPECT_EQ(write.status().code(), StatusCode::kNotFound) << write.status().ToString();
}

TEST(S3Store, CreateOnlyWrites) {
  S3Options options;
  options.part_size = 5 * kMiB;
  auto store = OpenTestStore(options);
  const std::string prefix = UniquePrefix("create-only");
  WriteOptions create_only;
  create_only.if_not_exists = true;
  // One part: a single PUT with If-None-Match: *, which Ceph RGW honours.
  ASSERT_TRUE(WriteAll(*store, prefix + "small", "first", create_only).ok());
  auto again = WriteAll(*store, prefix + "small", "second", create_only);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status().ToString();
  EXPECT_EQ(ReadAll(*store, prefix + "small").value_or(""), "first");
  const std::string large = DeterministicBytes(5, 12 * kMiB);
  if (TestServer() == "ceph_rgw") {
    // Beyond one part: Ceph RGW 16 ignores If-None-Match on
    // CompleteMultipartUpload, so the write must refuse rather than overwrite.
    auto writer = store->OpenWrite(prefix + "large", create_only);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    Status appended = (*writer)->Append(large);
    EXPECT_EQ(appended.code(), StatusCode::kUnimplemented) << appended.ToString();
    (*writer)->Abort();
  } else {
    // moto, like AWS S3, honours it on CompleteMultipartUpload: a multipart
    // create-only write goes through once, and a second is refused after
    // its parts went up, leaving neither the object changed nor an upload.
    ASSERT_TRUE(WriteAll(*store, prefix + "large", large, create_only).ok());
    auto second = WriteAll(*store, prefix + "large", DeterministicBytes(6, 12 * kMiB), create_only);
    EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists) << second.status().ToString();
    EXPECT_TRUE(ReadAll(*store, prefix + "large").value_or("") == large);
  }
  EXPECT_EQ(IncompleteUploads(store->client(), prefix), 0);
  DeletePrefix(*store, prefix);
}

TEST(S3Store, UnsignedPayloadWritesAreAccepted) {
  S3Options options;
  options.payload_signing = PayloadSigning::kUnsigned;
  auto store = OpenTestStore(options);
  const std::string key = UniquePrefix("unsigned") + "object";
  ASSERT_TRUE(WriteAll(*store, key, "unsigned payload, Content-MD5 checked").ok());
  EXPECT_EQ(ReadAll(*store, key).value_or(""), "unsigned payload, Content-MD5 checked");
  ASSERT_TRUE(store->Delete(key).ok());
}

TEST(S3Store, PresignedGetUrlReadsTheObject) {
  auto store = OpenTestStore();
  const std::string key = UniquePrefix("presign") + "a b+c.txt";
  ASSERT_TRUE(WriteAll(*store, key, "presigned").ok());
  auto url = store->client().PresignGet(key, std::chrono::minutes(5));
  ASSERT_TRUE(url.ok());
  HttpRequest request;
  request.url = *url;
  std::string body;
  StringSink sink(&body);
  auto response = MakeCurlTransport({})->Send(request, &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200) << response->error_body;
  EXPECT_EQ(body, "presigned");
  ASSERT_TRUE(store->Delete(key).ok());
}

TEST(S3Store, ServerSideCopyKeepsTheBytes) {
  auto store = OpenTestStore();
  const std::string prefix = UniquePrefix("copy");
  const std::string data = DeterministicBytes(3, 3 * kMiB);
  ASSERT_TRUE(WriteAll(*store, prefix + "from", data).ok());
  auto copied = store->Copy(prefix + "from", prefix + "to");
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(copied->size, data.size());
  EXPECT_TRUE(ReadAll(*store, prefix + "to").value_or("") == data);
  DeletePrefix(*store, prefix);
}

TEST(S3Client, UploadPartCopyAssemblesAnObjectFromRanges) {
  auto store = OpenTestStore();
  S3Client& client = store->client();
  const std::string prefix = UniquePrefix("part-copy");
  const std::string data = DeterministicBytes(6, 6 * kMiB + 123);
  ASSERT_TRUE(WriteAll(*store, prefix + "from", data).ok());
  auto upload_id = client.CreateMultipartUpload(prefix + "to", {});
  ASSERT_TRUE(upload_id.ok()) << upload_id.status().ToString();
  auto first = client.UploadPartCopy(prefix + "from", prefix + "to", *upload_id, 1, 0, 5 * kMiB - 1);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = client.UploadPartCopy(prefix + "from", prefix + "to", *upload_id, 2, 5 * kMiB, data.size() - 1);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto completed = client.CompleteMultipartUpload(prefix + "to", *upload_id, {{1, first->etag}, {2, second->etag}}, false);
  ASSERT_TRUE(completed.ok()) << completed.status().ToString();
  EXPECT_TRUE(ReadAll(*store, prefix + "to").value_or("") == data);
  DeletePrefix(*store, prefix);
}

}  // namespace
}  // namespace spool::s3
