#include "tests/storage/conformance.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "spool/core/crc32c.h"
#include "spool/core/executor.h"
#include "spool/core/storage/memory_store.h"
#include "spool/core/storage/transfer.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::conformance {

namespace {

constexpr uint64_t kMiB = 1 << 20;

// Writes `data` in `appends` pieces of uneven sizes.
Result<ObjectInfo> WriteInPieces(ObjectStore& store, const std::string& key, std::string_view data, int appends) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<WritableObject> writer, store.OpenWrite(key));
  size_t offset = 0;
  for (int i = 1; i <= appends; ++i) {
    // Piece i ends at i^2/appends^2 of the data: small pieces first.
    size_t end = i == appends ? data.size() : data.size() * i * i / (appends * appends);
    SPOOL_RETURN_IF_ERROR(writer->Append(data.substr(offset, end - offset)));
    offset = end;
  }
  if (writer->bytes_appended() != data.size()) return InternalError("bytes_appended is wrong");
  return writer->Close();
}

std::vector<std::string> KeysOf(const ListPage& page) {
  std::vector<std::string> keys;
  for (const ObjectInfo& info : page.objects) keys.push_back(info.key);
  return keys;
}

// Writes small objects "<key>" -> "<key>" in parallel.
void WriteSmallObjects(ObjectStore& store, const std::vector<std::string>& keys) {
  TaskGroup group(DefaultExecutor());
  for (const std::string& key : keys) {
    group.Submit([&store, &key]() -> Status { return WriteAll(store, key, key).status(); });
  }
  ASSERT_TRUE(group.Wait().ok());
}

using test_support::DeterministicBytes;
using test_support::ReadFile;
using test_support::TempDir;
using test_support::WriteFile;

}  // namespace

void PrintTo(const ConformanceTarget& target, std::ostream* out) { *out << target.name; }

std::vector<ConformanceTarget> Targets(std::vector<ConformanceTarget> targets) { return targets; }

std::string TargetName(const ::testing::TestParamInfo<ConformanceTarget>& info) { return info.param.name; }

void ObjectStoreConformance::SetUp() {
  under_test_ = GetParam().open();
  ASSERT_NE(under_test_.store, nullptr);
  ASSERT_TRUE(under_test_.prefix.ends_with('/')) << under_test_.prefix;
}

void ObjectStoreConformance::TearDown() {
  if (under_test_.store) {
    ListOptions options;
    options.prefix = under_test_.prefix;
    Result<ListPage> all = ListAll(store(), options);
    EXPECT_TRUE(all.ok()) << all.status().ToString();
    if (all.ok() && !all->objects.empty()) {
      Result<std::vector<DeleteFailure>> failures = store().DeleteMany(KeysOf(*all));
      EXPECT_TRUE(failures.ok() && failures->empty()) << "cleanup of " << under_test_.prefix << " failed";
    }
  }
  if (under_test_.cleanup) under_test_.cleanup();
}

// ---- Round trips -------------------------------------------------------------

namespace {

void CheckRoundTrip(ObjectStore& store, const std::string& key, size_t size, int appends) {
  const std::string data = DeterministicBytes(size + 7, size);
  Result<ObjectInfo> written = WriteInPieces(store, key, data, appends);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->size, size);
  if (written->crc32c) {
    EXPECT_EQ(*written->crc32c, crc32c::Value(data));
  }

  Result<ObjectInfo> stat = store.Stat(key);
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->key, key);
  EXPECT_EQ(stat->size, size);
  if (stat->crc32c) {
    EXPECT_EQ(*stat->crc32c, crc32c::Value(data));
  }

  Result<std::unique_ptr<ReadableObject>> object = store.OpenRead(key);
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ((*object)->info().size, size);

  // Sequential ReadAt in chunks that do not divide the size.
  std::string sequential(size, '\0');
  const size_t chunk = std::max<size_t>(1, std::min<size_t>(size, 3 * kMiB + 5));
  for (size_t offset = 0; offset < size; offset += chunk) {
    std::span<char> buffer = std::span<char>(sequential).subspan(offset, std::min(chunk, size - offset));
    Result<size_t> n = (*object)->ReadAt(offset, buffer);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, buffer.size()) << "at offset " << offset;
  }
  EXPECT_TRUE(sequential == data) << "ReadAt returned different bytes";

  // Parallel ranged reads, with parts small enough that there are several.
  std::string parallel(size + 100, '\0');  // asks for more than there is
  TransferOptions options;
  options.part_size = std::max<uint64_t>(1, size / 7 + 1);
  Result<size_t> n = ReadParallel(**object, 0, parallel, options);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, size);
  parallel.resize(size);
  EXPECT_TRUE(parallel == data) << "ReadParallel returned different bytes";
}

}  // namespace

TEST_P(ObjectStoreConformance, RoundTripEmptyObject) { CheckRoundTrip(store(), Key("empty"), 0, 1); }

TEST_P(ObjectStoreConformance, RoundTripOneByteObject) { CheckRoundTrip(store(), Key("one-byte"), 1, 1); }

TEST_P(ObjectStoreConformance, RoundTripOneMiBObject) { CheckRoundTrip(store(), Key("one-mib"), kMiB, 5); }

TEST_P(ObjectStoreConformance, RoundTrip100MiBObject) {
  CheckRoundTrip(store(), Key("hundred-mib"), 100 * kMiB, 9);
}

TEST_P(ObjectStoreConformance, OverwriteReplacesContent) {
  ASSERT_TRUE(WriteAll(store(), Key("obj"), "first version").ok());
  ASSERT_TRUE(WriteAll(store(), Key("obj"), "second").ok());
  Result<std::string> content = ReadAll(store(), Key("obj"));
  ASSERT_TRUE(content.ok()) << content.status().ToString();
  EXPECT_EQ(*content, "second");
}

// ---- Ranged reads ------------------------------------------------------------

TEST_P(ObjectStoreConformance, RangedReadsAtTheEdges) {
  const std::string data = DeterministicBytes(1, 1000);
  ASSERT_TRUE(WriteAll(store(), Key("ranged"), data).ok());
  Result<std::unique_ptr<ReadableObject>> opened = store().OpenRead(Key("ranged"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ReadableObject& object = **opened;
  char buffer[100];

  Result<size_t> last = object.ReadAt(999, std::span<char>(buffer, 1));
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(*last, 1u);
  EXPECT_EQ(buffer[0], data[999]);

  Result<size_t> short_read = object.ReadAt(990, buffer);
  ASSERT_TRUE(short_read.ok()) << short_read.status().ToString();
  EXPECT_EQ(*short_read, 10u);
  EXPECT_EQ(std::string_view(buffer, 10), std::string_view(data).substr(990));

  Result<size_t> middle = object.ReadAt(500, buffer);
  ASSERT_TRUE(middle.ok()) << middle.status().ToString();
  EXPECT_EQ(*middle, 100u);
  EXPECT_EQ(std::string_view(buffer, 100), std::string_view(data).substr(500, 100));

  Result<size_t> at_end = object.ReadAt(1000, buffer);
  ASSERT_TRUE(at_end.ok()) << at_end.status().ToString();
  EXPECT_EQ(*at_end, 0u);

  Result<size_t> past_end = object.ReadAt(1001, buffer);
  EXPECT_EQ(past_end.status().code(), StatusCode::kOutOfRange) << past_end.status().ToString();

  TransferOptions small_parts;
  small_parts.part_size = 3;
  Result<size_t> parallel_tail = ReadParallel(object, 950, buffer, small_parts);
  ASSERT_TRUE(parallel_tail.ok()) << parallel_tail.status().ToString();
  EXPECT_EQ(*parallel_tail, 50u);
  EXPECT_EQ(std::string_view(buffer, 50), std::string_view(data).substr(950));
  EXPECT_EQ(ReadParallel(object, 2000, buffer, small_parts).status().code(), StatusCode::kOutOfRange);
}

// ---- Listing -----------------------------------------------------------------

TEST_P(ObjectStoreConformance, Lists2500KeysInPagesOf1000) {
  std::vector<std::string> keys;
  for (int i = 0; i < 2500; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "many/key-%05d", i);
    keys.push_back(Key(name));
  }
  ASSERT_NO_FATAL_FAILURE(WriteSmallObjects(store(), keys));

  ListOptions options;
  options.prefix = Key("many/");
  options.max_keys = 1000;
  std::vector<std::string> listed;
  std::vector<size_t> page_sizes;
  do {
    Result<ListPage> page = store().List(options);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    ASSERT_LE(page->objects.size(), 1000u);
    EXPECT_TRUE(page->common_prefixes.empty());
    page_sizes.push_back(page->objects.size());
    for (const ObjectInfo& info : page->objects) {
      listed.push_back(info.key);
      EXPECT_EQ(info.size, info.key.size());
    }
    options.page_token = page->next_page_token;
    ASSERT_LE(page_sizes.size(), 10u) << "listing does not end";
  } while (!options.page_token.empty());
  EXPECT_EQ(listed, keys);  // every key once, in order
  EXPECT_EQ(page_sizes, (std::vector<size_t>{1000, 1000, 500}));

  ListOptions narrower;
  narrower.prefix = Key("many/key-024");
  Result<ListPage> tail = ListAll(store(), narrower);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(KeysOf(*tail), std::vector<std::string>(keys.begin() + 2400, keys.end()));
}

TEST_P(ObjectStoreConformance, ListsWithPrefixAndDelimiter) {
  const std::vector<std::string> names = {"d/a", "d/b/1", "d/b/2", "d/c-1", "d/c/x/y", "d/c0", "d/e", "dz"};
  std::vector<std::string> keys;
  for (const std::string& name : names) keys.push_back(Key(name));
  ASSERT_NO_FATAL_FAILURE(WriteSmallObjects(store(), keys));

  ListOptions recursive;
  recursive.prefix = Key("d/");
  Result<ListPage> all = ListAll(store(), recursive);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  // Byte order of the full key: '-' < '/' < '0'.
  EXPECT_EQ(KeysOf(*all), std::vector<std::string>(keys.begin(), keys.begin() + 7));

  ListOptions folders;
  folders.prefix = Key("d/");
  folders.delimiter = "/";
  Result<ListPage> top = ListAll(store(), folders);
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  EXPECT_EQ(KeysOf(*top), (std::vector<std::string>{Key("d/a"), Key("d/c-1"), Key("d/c0"), Key("d/e")}));
  EXPECT_EQ(top->common_prefixes, (std::vector<std::string>{Key("d/b/"), Key("d/c/")}));

  ListOptions partial_name;
  partial_name.prefix = Key("d/c");
  partial_name.delimiter = "/";
  Result<ListPage> c = ListAll(store(), partial_name);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(KeysOf(*c), (std::vector<std::string>{Key("d/c-1"), Key("d/c0")}));
  EXPECT_EQ(c->common_prefixes, (std::vector<std::string>{Key("d/c/")}));

  // One entry per page: objects and common prefixes interleave in key order.
  ListOptions one_by_one = folders;
  one_by_one.max_keys = 1;
  std::vector<std::string> entries;
  do {
    Result<ListPage> page = store().List(one_by_one);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    ASSERT_EQ(page->objects.size() + page->common_prefixes.size(), 1u);
    entries.push_back(page->objects.empty() ? page->common_prefixes[0] : page->objects[0].key);
    one_by_one.page_token = page->next_page_token;
    ASSERT_LE(entries.size(), 10u) << "listing does not end";
  } while (!one_by_one.page_token.empty());
  EXPECT_EQ(entries, (std::vector<std::string>{Key("d/a"), Key("d/b/"), Key("d/c-1"), Key("d/c/"), Key("d/c0"),
                                               Key("d/e")}));

  ListOptions nothing;
  nothing.prefix = Key("no-such-prefix/");
  Result<ListPage> empty = store().List(nothing);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->objects.empty());
  EXPECT_TRUE(empty->common_prefixes.empty());
  EXPECT_TRUE(empty->next_page_token.empty());
}

// ---- Deleting ----------------------------------------------------------------

TEST_P(ObjectStoreConformance, DeleteAndDeleteMany) {
  std::vector<std::string> keys = {Key("del/1"), Key("del/2"), Key("del/3"), Key("del/4"), Key("del/5")};
  ASSERT_NO_FATAL_FAILURE(WriteSmallObjects(store(), keys));

  ASSERT_TRUE(store().Delete(keys[0]).ok());
  EXPECT_EQ(store().Stat(keys[0]).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store().Delete(keys[0]).ok()) << "deleting a missing key is OK";

  Result<std::vector<DeleteFailure>> failures = store().DeleteMany({keys[1], keys[2], keys[3], Key("del/missing")});
  ASSERT_TRUE(failures.ok()) << failures.status().ToString();
  EXPECT_TRUE(failures->empty());

  ListOptions options;
  options.prefix = Key("del/");
  Result<ListPage> left = ListAll(store(), options);
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_EQ(KeysOf(*left), std::vector<std::string>{keys[4]});
}

// ---- Conditional create ------------------------------------------------------

TEST_P(ObjectStoreConformance, ConditionalCreate) {
  WriteOptions create_only;
  create_only.if_not_exists = true;
  Result<ObjectInfo> first = WriteAll(store(), Key("cond"), "first", create_only);
  if (!GetParam().supports_if_not_exists) {
    EXPECT_EQ(first.status().code(), StatusCode::kUnimplemented) << first.status().ToString();
    return;
  }
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Result<ObjectInfo> second = WriteAll(store(), Key("cond"), "second", create_only);
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists) << second.status().ToString();
  Result<std::string> content = ReadAll(store(), Key("cond"));
  ASSERT_TRUE(content.ok()) << content.status().ToString();
  EXPECT_EQ(*content, "first");
  // A plain write still replaces it.
  ASSERT_TRUE(WriteAll(store(), Key("cond"), "third").ok());
  EXPECT_EQ(ReadAll(store(), Key("cond")).value_or(""), "third");
}

// ---- Unfinished writes -------------------------------------------------------

TEST_P(ObjectStoreConformance, WriterDestroyedWithoutCloseLeavesNothing) {
  ASSERT_TRUE(WriteAll(store(), Key("kept"), "old").ok());
  {
    Result<std::unique_ptr<WritableObject>> writer = store().OpenWrite(Key("dropped"));
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    ASSERT_TRUE((*writer)->Append(DeterministicBytes(3, 100000)).ok());
    Result<std::unique_ptr<WritableObject>> replacing = store().OpenWrite(Key("kept"));
    ASSERT_TRUE(replacing.ok()) << replacing.status().ToString();
    ASSERT_TRUE((*replacing)->Append("new").ok());
  }
  EXPECT_EQ(store().Stat(Key("dropped")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadAll(store(), Key("kept")).value_or(""), "old");
  ListOptions options;
  options.prefix = under_test_.prefix;
  Result<ListPage> listed = ListAll(store(), options);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(KeysOf(*listed), std::vector<std::string>{Key("kept")});
}

TEST_P(ObjectStoreConformance, AbortLeavesNothing) {
  Result<std::unique_ptr<WritableObject>> writer = store().OpenWrite(Key("aborted"));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append("some bytes").ok());
  (*writer)->Abort();
  EXPECT_FALSE((*writer)->Close().ok()) << "Close after Abort must fail";
  EXPECT_EQ(store().Stat(Key("aborted")).status().code(), StatusCode::kNotFound);
  ListOptions options;
  options.prefix = under_test_.prefix;
  Result<ListPage> listed = ListAll(store(), options);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_TRUE(listed->objects.empty());
}

// ---- Concurrency and pinning -------------------------------------------------

TEST_P(ObjectStoreConformance, ConcurrentReadAtFromEightThreads) {
  const std::string data = DeterministicBytes(5, 4 * kMiB);
  ASSERT_TRUE(WriteAll(store(), Key("shared"), data).ok());
  Result<std::unique_ptr<ReadableObject>> opened = store().OpenRead(Key("shared"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ReadableObject& object = **opened;
  std::atomic<int> mismatches{0};
  std::atomic<int> reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(t);
      std::string buffer;
      for (int i = 0; i < 32; ++i) {
        uint64_t offset = random() % data.size();
        buffer.resize(1 + random() % (256 * 1024));
        Result<size_t> n = object.ReadAt(offset, buffer);
        size_t expected = std::min<size_t>(buffer.size(), data.size() - offset);
        if (!n.ok() || *n != expected || std::string_view(buffer.data(), *n) != std::string_view(data).substr(offset, *n)) {
          ++mismatches;
        }
        ++reads;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(reads.load(), 8 * 32);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_P(ObjectStoreConformance, OpenReadIsPinnedToOneVersion) {
  const std::string old_content = DeterministicBytes(11, 5000);
  ASSERT_TRUE(WriteAll(store(), Key("pinned"), old_content).ok());
  Result<std::unique_ptr<ReadableObject>> opened = store().OpenRead(Key("pinned"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const std::string old_version = (*opened)->info().version;
  EXPECT_FALSE(old_version.empty());

  Result<ObjectInfo> replaced = WriteAll(store(), Key("pinned"), DeterministicBytes(12, 5000));
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_NE(replaced->version, old_version);

  std::string buffer(5000, '\0');
  Result<size_t> n = (*opened)->ReadAt(0, buffer);
  switch (GetParam().replaced_object_read) {
    case ReplacedObjectRead::kFailedPrecondition:
      EXPECT_EQ(n.status().code(), StatusCode::kFailedPrecondition) << n.status().ToString();
      break;
    case ReplacedObjectRead::kOldContent:
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      EXPECT_EQ(*n, old_content.size());
      EXPECT_TRUE(buffer == old_content) << "a pinned read mixed versions";
      break;
  }
}

// ---- Keys and errors ---------------------------------------------------------

TEST_P(ObjectStoreConformance, SpecialCharacterAndUnicodeKeys) {
  const std::vector<std::string> names = {
      "with space", "plus+sign", "percent%20encoded", "hash#tag", "question?mark", "equals=and&amp",
      "comma,semi;colon", "quote'and\"double", "tilde~star*(paren)", "unicode-\xc3\xbc-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x98\x80",
      "dollar$at@bang!"};
  std::vector<std::string> keys;
  for (const std::string& name : names) keys.push_back(Key("special/" + name));
  ASSERT_NO_FATAL_FAILURE(WriteSmallObjects(store(), keys));
  for (const std::string& key : keys) {
    Result<ObjectInfo> stat = store().Stat(key);
    ASSERT_TRUE(stat.ok()) << key << ": " << stat.status().ToString();
    EXPECT_EQ(stat->key, key);
    EXPECT_EQ(ReadAll(store(), key).value_or("<error>"), key);
  }
  ListOptions options;
  options.prefix = Key("special/");
  Result<ListPage> listed = ListAll(store(), options);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(KeysOf(*listed), sorted);
}

TEST_P(ObjectStoreConformance, MissingObjectIsNotFound) {
  Result<ObjectInfo> stat = store().Stat(Key("missing"));
  EXPECT_EQ(stat.status().code(), StatusCode::kNotFound) << stat.status().ToString();
  EXPECT_EQ(store().OpenRead(Key("missing")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadAll(store(), Key("missing")).status().code(), StatusCode::kNotFound);
}

// ---- Transfers ---------------------------------------------------------------

TEST_P(ObjectStoreConformance, CopyUploadAndDownloadRoundTrip) {
  const std::string data = DeterministicBytes(21, 3 * kMiB + 17);
  TransferOptions options;
  options.part_size = kMiB;  // several parts in flight
  TempDir local("spool-conformance");
  ASSERT_FALSE(local.path().empty());
  WriteFile(local.path() / "source.bin", data);

  Result<ObjectInfo> uploaded = UploadFile(local.path() / "source.bin", store(), Key("uploaded"), options);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status().ToString();
  EXPECT_EQ(uploaded->size, data.size());
  ASSERT_TRUE(uploaded->crc32c.has_value());
  EXPECT_EQ(*uploaded->crc32c, crc32c::Value(data));
  EXPECT_TRUE(ReadAll(store(), Key("uploaded")).value_or("") == data);

  Result<ObjectInfo> copied = CopyObject(store(), Key("uploaded"), store(), Key("copied"), options);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(copied->size, data.size());
  EXPECT_TRUE(ReadAll(store(), Key("copied")).value_or("") == data);

  // Across stores: out to memory and back again.
  MemoryStore memory("conformance-transfer");
  const std::string memory_key = GetParam().name + "/" + std::to_string(::getpid());
  Result<ObjectInfo> out = CopyObject(store(), Key("copied"), memory, memory_key, options);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  Result<ObjectInfo> back = CopyObject(memory, memory_key, store(), Key("back"), options);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(ReadAll(store(), Key("back")).value_or("") == data);
  ASSERT_TRUE(memory.Delete(memory_key).ok());

  Result<ObjectInfo> downloaded = DownloadFile(store(), Key("back"), local.path() / "sub" / "downloaded.bin", options);
  ASSERT_TRUE(downloaded.ok()) << downloaded.status().ToString();
  ASSERT_TRUE(downloaded->crc32c.has_value());
  EXPECT_EQ(*downloaded->crc32c, crc32c::Value(data));
  EXPECT_TRUE(ReadFile(local.path() / "sub" / "downloaded.bin") == data);
  // Nothing but the file itself is left in its folder.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(local.path() / "sub")) ++entries;
  EXPECT_EQ(entries, 1u);

  Result<ObjectInfo> empty = CopyObject(store(), Key("missing"), store(), Key("never"), options);
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().Stat(Key("never")).status().code(), StatusCode::kNotFound);
}

}  // namespace spool::conformance
