// Behaviour of the local-file store beyond the conformance suite: temporary
// files, paths, folders and listing order.
#include "spool/core/storage/local_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "spool/core/storage/local_files.h"
#include "spool/core/storage/registry.h"
#include "spool/core/url.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool {
namespace {

namespace fs = std::filesystem;
using test_support::WriteFile;

class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }

  // The key of a path inside the test folder.
  std::string Key(const std::string& relative) const { return (dir_ / relative).string().substr(1); }

  std::vector<std::string> FilesIn(const fs::path& folder) const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  LocalStore store_;
  const test_support::TempDir temp_{"spool-local-test"};
  const fs::path dir_ = temp_.path();
};

TEST_F(LocalStoreTest, WritesThroughAHiddenTemporaryFileRenamedOnClose) {
  Result<std::unique_ptr<WritableObject>> writer = store_.OpenWrite(Key("sub/deeper/file.bin"));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();  // parent folders created
  ASSERT_TRUE((*writer)->Append("hello ").ok());
  ASSERT_TRUE((*writer)->Append(std::string(3 << 20, 'x')).ok());  // larger than the write buffer

  // Until Close only the temporary file exists, and no listing shows it.
  std::vector<std::string> during = FilesIn(dir_ / "sub/deeper");
  ASSERT_EQ(during.size(), 1u);
  EXPECT_TRUE(during[0].starts_with(".file.bin.spool-tmp-")) << during[0];
  EXPECT_EQ(store_.Stat(Key("sub/deeper/file.bin")).status().code(), StatusCode::kNotFound);
  ListOptions everything;
  everything.prefix = Key("");
  Result<ListPage> listed = ListAll(store_, everything);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_TRUE(listed->objects.empty());

  Result<ObjectInfo> info = (*writer)->Close();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, 6u + (3 << 20));
  EXPECT_FALSE(info->crc32c.has_value());
  EXPECT_EQ(FilesIn(dir_ / "sub/deeper"), std::vector<std::string>{"file.bin"});
  EXPECT_EQ(fs::file_size(dir_ / "sub/deeper/file.bin"), info->size);
}

TEST_F(LocalStoreTest, AbortAndDestructionRemoveTheTemporaryFile) {
  {
    Result<std::unique_ptr<WritableObject>> writer = store_.OpenWrite(Key("a.txt"));
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append("data").ok());
  }
  Result<std::unique_ptr<WritableObject>> aborted = store_.OpenWrite(Key("b.txt"));
  ASSERT_TRUE(aborted.ok());
  (*aborted)->Abort();
  EXPECT_TRUE(FilesIn(dir_).empty());
}

TEST_F(LocalStoreTest, ConditionalCreateHasExactlyOneWinner) {
  std::atomic<int> created{0};
  std::atomic<int> already_exists{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      WriteOptions options;
      options.if_not_exists = true;
      Result<ObjectInfo> result = WriteAll(store_, Key("manifest"), "writer " + std::to_string(i), options);
      if (result.ok()) ++created;
      if (result.status().code() == StatusCode::kAlreadyExists) ++already_exists;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(already_exists.load(), 7);
  EXPECT_EQ(FilesIn(dir_), std::vector<std::string>{"manifest"});
}

TEST_F(LocalStoreTest, RelativePathsResolveAgainstTheCurrentDirectory) {
  fs::path previous = fs::current_path();
  fs::current_path(dir_);
  Result<StoreLocation> location = OpenLocation("relative/name.txt");
  fs::current_path(previous);
  ASSERT_TRUE(location.ok()) << location.status().ToString();
  EXPECT_EQ(location->key, Key("relative/name.txt"));
  ASSERT_TRUE(WriteAll(*location->store, location->key, "content").ok());
  std::ifstream in(dir_ / "relative/name.txt");
  std::string content;
  in >> content;
  EXPECT_EQ(content, "content");
  EXPECT_EQ(location->store->Describe(location->key), (dir_ / "relative/name.txt").string());
}

TEST_F(LocalStoreTest, ListsInByteOrderOfTheFullKey) {
  for (const char* name : {"a0", "a/b", "a-c", "a/b0/z", "a/b-1", "b", "A", "a.d/e"}) WriteFile(dir_ / name, "x");
  ListOptions options;
  options.prefix = Key("");
  options.max_keys = 3;  // pages end inside folders too
  Result<ListPage> listed = ListAll(store_, options);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> keys;
  for (const ObjectInfo& info : listed->objects) keys.push_back(info.key.substr(Key("").size()));
  EXPECT_EQ(keys, (std::vector<std::string>{"A", "a-c", "a.d/e", "a/b", "a/b-1", "a/b0/z", "a0", "b"}));
}

TEST_F(LocalStoreTest, SkipsNonRegularFilesSayingWhatTheyAreAndFollowsLinks) {
  WriteFile(dir_ / "real/file", "12345");
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  fs::create_symlink(dir_ / "real/file", dir_ / "link-to-file");
  fs::create_symlink(dir_ / "real", dir_ / "link-to-dir");
  fs::create_symlink(dir_, dir_ / "real/loop");  // a cycle must not hang the walk
  fs::create_symlink(dir_ / "nowhere", dir_ / "dangling");
  for (int max_keys : {1000, 1}) {  // one page, and a page per key: each skipped entry is reported once
    ListOptions options;
    options.prefix = Key("");
    options.max_keys = max_keys;
    Result<ListPage> listed = ListAll(store_, options);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    std::vector<std::string> keys;
    for (const ObjectInfo& info : listed->objects) keys.push_back(info.key.substr(Key("").size()));
    EXPECT_EQ(keys, (std::vector<std::string>{"link-to-dir/file", "link-to-file", "real/file"}));
    EXPECT_EQ(listed->objects[1].size, 5u);
    std::vector<std::string> skipped;
    for (const SkippedEntry& entry : listed->skipped) skipped.push_back(entry.key.substr(Key("").size()) + ": " + entry.what);
    EXPECT_EQ(skipped, (std::vector<std::string>{"dangling: a symbolic link to nothing", "pipe: a FIFO (named pipe)"}))
        << "max_keys " << max_keys;
  }
}

TEST_F(LocalStoreTest, DelimiterListsFilesAndSubfolders) {
  WriteFile(dir_ / "data/train-1", "x");
  WriteFile(dir_ / "data/train-2/part", "x");
  WriteFile(dir_ / "data/test", "x");
  fs::create_directories(dir_ / "data/empty");
  ListOptions options;
  options.prefix = Key("data/tr");
  options.delimiter = "/";
  Result<ListPage> page = store_.List(options);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, Key("data/train-1"));
  EXPECT_EQ(page->common_prefixes, std::vector<std::string>{Key("data/train-2/")});

  options.prefix = Key("data/empty/");
  page = store_.List(options);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->objects.empty() && page->common_prefixes.empty());

  options.delimiter = ",";
  EXPECT_EQ(store_.List(options).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LocalStoreTest, FoldersAreNotObjects) {
  fs::create_directories(dir_ / "folder");
  Result<ObjectInfo> stat = store_.Stat(Key("folder"));
  EXPECT_EQ(stat.status().code(), StatusCode::kNotFound);
  EXPECT_NE(stat.status().message().find("is a directory"), std::string::npos) << stat.status().message();
  EXPECT_EQ(store_.OpenRead(Key("folder")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_.Delete(Key("folder")).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_.OpenWrite(Key("folder")).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs::is_directory(dir_ / "folder"));
}

TEST_F(LocalStoreTest, ErrorsNameThePath) {
  Result<ObjectInfo> missing = store_.Stat(Key("nothing-here"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find((dir_ / "nothing-here").string()), std::string::npos);
  Result<std::unique_ptr<ReadableObject>> open = store_.OpenRead(Key("nothing-here"));
  EXPECT_NE(open.status().message().find((dir_ / "nothing-here").string()), std::string::npos);
}

TEST_F(LocalStoreTest, RejectsDotSegmentsAndNulBytes) {
  for (std::string key : {Key("a/../b"), Key("a/./b"), Key("a//b"), Key("dir/"), std::string("")}) {
    EXPECT_EQ(store_.Stat(key).status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_EQ(store_.OpenWrite(key).status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_EQ(store_.Delete(key).code(), StatusCode::kInvalidArgument) << key;
  }
  std::string with_nul = Key("a");
  with_nul.push_back('\0');
  EXPECT_EQ(store_.OpenWrite(with_nul).status().code(), StatusCode::kInvalidArgument);
  ListOptions options;
  options.prefix = Key("x/../");
  EXPECT_EQ(store_.List(options).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LocalStoreTest, ChangeInPlaceAfterOpenIsDetected) {
  WriteFile(dir_ / "log", "0123456789");
  Result<std::unique_ptr<ReadableObject>> opened = store_.OpenRead(Key("log"));
  ASSERT_TRUE(opened.ok());
  std::ofstream(dir_ / "log", std::ios::app) << "more";
  char buffer[4];
  EXPECT_EQ((*opened)->ReadAt(0, buffer).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(LocalStoreTest, VersionChangesWhenTheFileIsReplaced) {
  Result<ObjectInfo> first = WriteAll(store_, Key("v"), "one");
  Result<ObjectInfo> second = WriteAll(store_, Key("v"), "two");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first->version, second->version);
  Result<ObjectInfo> stat = store_.Stat(Key("v"));
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->version, second->version);
}

// A writer killed before Close leaves its temporary file; the store lists it
// as an incomplete upload of its target and aborting deletes only that file.
TEST_F(LocalStoreTest, LeftoverTemporaryFilesAreIncompleteUploads) {
  fs::create_directories(dir_ / "ckpt" / "step-1");
  const fs::path leftover = dir_ / "ckpt" / "step-1" / TemporaryNameFor("weights.bin");
  WriteFile(leftover, "half of the weights");
  WriteFile(dir_ / "ckpt" / "step-1" / "done.bin", "complete");
  WriteFile(dir_ / "other" / TemporaryNameFor("x"), "not under the prefix");
  // An hour old.
  const timespec old[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, leftover.c_str(), old, 0), 0);

  auto listed = store_.ListIncompleteUploads(Key("ckpt/"));
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key, Key("ckpt/step-1/weights.bin"));
  EXPECT_EQ((*listed)[0].id, leftover.string().substr(1));

  auto young = AbortIncompleteUploads(store_, Key("ckpt/"), std::chrono::hours(2));
  ASSERT_TRUE(young.ok());
  EXPECT_TRUE(young->empty());
  auto dry_run = AbortIncompleteUploads(store_, Key("ckpt/"), std::chrono::minutes(30), /*dry_run=*/true);
  ASSERT_TRUE(dry_run.ok());
  EXPECT_EQ(dry_run->size(), 1u);
  EXPECT_TRUE(fs::exists(leftover));
  auto aborted = AbortIncompleteUploads(store_, Key("ckpt/"), std::chrono::minutes(30));
  ASSERT_TRUE(aborted.ok()) << aborted.status().ToString();
  EXPECT_EQ(aborted->size(), 1u);
  EXPECT_FALSE(fs::exists(leftover));
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / "step-1" / "done.bin"));
  EXPECT_TRUE(fs::exists(dir_ / "other"));
  // Never deletes a file that is not a temporary one, whatever it is asked.
  IncompleteUpload forged{Key("ckpt/step-1/done.bin"), Key("ckpt/step-1/done.bin"), {}};
  EXPECT_EQ(store_.AbortIncompleteUpload(forged).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / "step-1" / "done.bin"));
}

}  // namespace
}  // namespace spool
