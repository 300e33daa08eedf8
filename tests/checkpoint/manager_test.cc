// CheckpointManager on the memory store and the local-file store.
#include "spool/checkpoint/checkpoint_manager.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <optional>
#include <fstream>
#include <sys/stat.h>
#include <thread>

#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::CommittedSteps;
using testing::DeterministicBytes;
using testing::FaultyStore;
using testing::StoreKind;
using testing::StoreKindName;
using testing::TestRoot;
using testing::WriteFolder;
using test_support::ReadFile;
using test_support::ReadTree;
using test_support::TempDir;

// 20 files from 0 bytes to a few MiB, some in subfolders.
std::map<std::string, std::string> MixedFolder(uint64_t seed) {
  const uint64_t sizes[20] = {0,         1,         7,           511,       4096,       4097,        65535,
                              65536,     100'000,   1 << 20,     (1 << 20) + 1, 3 << 20, (3 << 20) + 12345, 123,
                              8 << 10,   250'000,   2'000'000,   17,        (1 << 21) - 1, 42};
  std::map<std::string, std::string> files;
  for (int i = 0; i < 20; ++i) {
    std::string name = (i % 3 == 0 ? "sub/" : i % 5 == 0 ? "sub/deeper/" : "") + std::string("file-") +
                       std::to_string(i) + (i == 0 ? ".empty" : ".bin");
    files[name] = DeterministicBytes(seed * 100 + i, sizes[i]);
  }
  return files;
}

class ManagerTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    root_.emplace(GetParam(), scratch_.path(), "ckpt-test");
    inner_ = root_->store;
    root_key_ = root_->root_key;
    store_ = std::make_shared<FaultyStore>(inner_);
  }
  void TearDown() override { root_.reset(); }

  std::unique_ptr<CheckpointManager> Manager(CheckpointOptions options = {}) {
    return std::make_unique<CheckpointManager>(store_, root_key_, std::move(options));
  }
  // A restore target in a folder of its own, so its siblings can be checked.
  fs::path Target() {
    fs::create_directories(scratch_.path() / "out");
    return scratch_.path() / "out" / "restored";
  }
  std::string Key(std::string_view relative) { return root_key_ + "/" + std::string(relative); }
  // The key of a committed step's file: under the folder of the save that
  // wrote it ("step-.../save-<id>/<path>"), as its manifest says.
  std::string StoredKey(int64_t step, std::string_view path) {
    Result<CheckpointManifest> manifest = Manager()->ReadManifest(step);
    EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
    if (!manifest.ok()) return "";
    for (const CheckpointFile& file : manifest->files) {
      if (file.path == path) return CheckpointLayout(root_key_).FileKey(step, file.object_path());
    }
    ADD_FAILURE() << "step " << step << " has no file " << path;
    return "";
  }
  // Leaves what a save killed halfway would: files without a manifest.
  void WritePartialStep(int64_t step) {
    CheckpointLayout layout(root_key_);
    ASSERT_TRUE(WriteAll(*inner_, layout.FileKey(step, "model.bin"), "half").ok());
  }
  // Entries of a folder's parent other than the folder: what a restore must not leave behind.
  static std::vector<std::string> Siblings(const fs::path& folder) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder.parent_path())) {
      if (entry.path().filename() != folder.filename()) names.push_back(entry.path().filename().string());
    }
    return names;
  }

  TempDir scratch_{"spool-ckpt-test"};
  std::optional<TestRoot> root_;
  std::shared_ptr<ObjectStore> inner_;
  std::shared_ptr<FaultyStore> store_;
  std::string root_key_;
};

TEST_P(ManagerTest, SavesAndRestoresAFolderByteIdentical) {
  auto files = MixedFolder(1);
  fs::path source = scratch_.path() / "source";
  WriteFolder(source, files);
  auto manager = Manager();
  Result<CheckpointSource> from = CheckpointSource::FromFolder(source);
  ASSERT_TRUE(from.ok()) << from.status().ToString();
  Result<CheckpointManifest> saved = manager->Save(1234, *from, {{"loader", "epoch=2"}});
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->files.size(), 20u);

  EXPECT_TRUE(inner_->Stat(Key("step-000000001234/MANIFEST.json")).ok());
  const std::string stored = StoredKey(1234, "sub/file-0.empty");
  EXPECT_NE(stored.find("/step-000000001234/save-"), std::string::npos) << stored;
  EXPECT_TRUE(inner_->Stat(stored).ok());

  fs::path target = Target();
  Result<CheckpointManifest> restored = manager->RestoreLatest(target);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->step, 1234);
  EXPECT_EQ(restored->metadata.at("loader"), "epoch=2");
  EXPECT_EQ(restored->files, saved->files);
  EXPECT_EQ(ReadTree(target), files);
  EXPECT_TRUE(Siblings(target).empty()) << "no temporary folder left";
  EXPECT_TRUE(manager->Verify(1234).ok());
}

TEST_P(ManagerTest, RestoreReplacesAnEarlierRestoreOfTheSameRootWholly) {
  auto manager = Manager();
  CheckpointSource first;
  first.AddBuffer("a.bin", "old a").AddBuffer("stale.bin", "from an older step");
  ASSERT_TRUE(manager->Save(1, first).ok());
  CheckpointSource second;
  second.AddBuffer("a.bin", "new a").AddBuffer("dir/b.bin", DeterministicBytes(3, 70000));
  ASSERT_TRUE(manager->Save(2, second).ok());
  fs::path target = Target();
  ASSERT_TRUE(manager->Restore(1, target).ok());
  // The marker names the root and the step; a training job may add files to
  // the folder, which the next restore of the same root replaces.
  const std::string marker = ReadFile(target / std::string(kRestoreMarkerName));
  EXPECT_NE(marker.find("\nroot: " + store_->Describe(root_key_) + "\n"), std::string::npos) << marker;
  EXPECT_NE(marker.find("\nstep: 1\n"), std::string::npos) << marker;
  test_support::WriteFile(target / "written-by-training.bin", "x");
  Status second_restore = manager->Restore(2, target).status();
  ASSERT_TRUE(second_restore.ok()) << second_restore.ToString();
  EXPECT_EQ(ReadTree(target), (std::map<std::string, std::string>{{"a.bin", "new a"},
                                                                     {"dir/b.bin", DeterministicBytes(3, 70000)}}));
  EXPECT_NE(ReadFile(target / std::string(kRestoreMarkerName)).find("\nstep: 2\n"), std::string::npos);
  EXPECT_TRUE(Siblings(target).empty());
  // The marker is the folder's, not the checkpoint's: saving the folder leaves it out.
  Result<CheckpointSource> again = CheckpointSource::FromFolder(target);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  for (const auto& entry : again->entries()) EXPECT_NE(entry.path, kRestoreMarkerName);
  EXPECT_EQ(again->entries().size(), 2u);
}

TEST_P(ManagerTest, RestoreIntoAFolderOfOtherFilesIsRefusedUnlessReplaceIsAsked) {
  auto manager = Manager();
  CheckpointSource source;
  source.AddBuffer("model.bin", "weights");
  ASSERT_TRUE(manager->Save(1, source).ok());
  // A project folder (`spool ckpt restore ROOT .` from it): never deleted by default.
  fs::path project = Target();
  const std::map<std::string, std::string> mine = {{"train.py", "print('hi')"}, {"data/rows.csv", "1,2\n"}};
  WriteFolder(project, mine);
  Status refused = manager->Restore(1, project).status();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_NE(refused.message().find(project.string()), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("--replace"), std::string::npos) << refused.message();
  EXPECT_EQ(ReadTree(project), mine);
  EXPECT_FALSE(fs::exists(project / std::string(kRestoreMarkerName)));
  EXPECT_TRUE(Siblings(project).empty()) << "nothing was downloaded";
  EXPECT_EQ(manager->RestoreLatest(project).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(manager->RestoreRank(1, kAllRanks, project).status().code(), StatusCode::kFailedPrecondition);

  // An earlier restore of another root is someone else's too.
  auto other = std::make_unique<CheckpointManager>(store_, root_key_ + "-other");
  ASSERT_TRUE(other->Save(1, source).ok());
  fs::path restored_elsewhere = scratch_.path() / "out" / "other";
  ASSERT_TRUE(other->Restore(1, restored_elsewhere).ok());
  EXPECT_EQ(manager->Restore(1, restored_elsewhere).status().code(), StatusCode::kFailedPrecondition);

  // An empty folder is fine, and so is asking for the replacement.
  fs::path empty = scratch_.path() / "out" / "empty";
  fs::create_directories(empty);
  EXPECT_TRUE(manager->Restore(1, empty).ok());
  ASSERT_TRUE(manager->Restore(1, project, ExistingFolder::kReplace).ok());
  EXPECT_EQ(ReadTree(project), (std::map<std::string, std::string>{{"model.bin", "weights"}}));
}

// Two writers save the same step from different folders at the same time:
// one commits, the other is told its save was discarded, and the committed
// step restores and verifies as exactly the winner's bytes (each save uploads
// under a folder of its own, so the loser cannot overwrite the winner's
// files); the loser's files are gone.
TEST_P(ManagerTest, TwoSavesOfOneStepAtOnceCommitOneIntactCheckpoint) {
  for (int round = 0; round < 5; ++round) {
    const int64_t step = 100 + round;
    std::map<std::string, std::string> contents[2];
    CheckpointSource sources[2];
    for (int writer = 0; writer < 2; ++writer) {
      for (int i = 0; i < 6; ++i) {
        const std::string name = "shard-" + std::to_string(i) + ".bin";
        contents[writer][name] = DeterministicBytes(writer * 1000 + round * 10 + i, 200000 + i);
        sources[writer].AddBuffer(name, contents[writer][name]);
      }
    }
    auto first = Manager();
    auto second = Manager();
    Status results[2];
    std::thread racing([&] { results[1] = second->Save(step, sources[1]).status(); });
    results[0] = first->Save(step, sources[0]).status();
    racing.join();

    ASSERT_NE(results[0].ok(), results[1].ok()) << results[0].ToString() << " / " << results[1].ToString();
    const int winner = results[0].ok() ? 0 : 1;
    const Status& lost = results[1 - winner];
    EXPECT_EQ(lost.code(), StatusCode::kAlreadyExists) << lost.ToString();
    EXPECT_TRUE(first->Verify(step).ok()) << first->Verify(step).ToString();
    fs::path target = scratch_.path() / "out" / ("race-" + std::to_string(round));
    ASSERT_TRUE(first->Restore(step, target).ok());
    EXPECT_EQ(ReadTree(target), contents[winner]);
    // Only the winner's files (and the manifest) remain in the step folder.
    ListOptions list;
    list.prefix = CheckpointLayout(root_key_).StepPrefix(step);
    Result<ListPage> page = ListAll(*inner_, list);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_EQ(page->objects.size(), contents[winner].size() + 1);
  }
}

// The restore downloads into a mkdtemp folder (0700, so nobody sees files
// arriving); the folder it puts in place has the mode mkdir would give a new
// one, or the mode of the folder it replaces.
TEST_P(ManagerTest, RestoredFolderHasTheModeMkdirGives) {
  auto manager = Manager();
  CheckpointSource source;
  source.AddBuffer("a.bin", "a").AddBuffer("dir/b.bin", "b");
  ASSERT_TRUE(manager->Save(1, source).ok());
  auto mode = [](const fs::path& path) { return fs::status(path).permissions() & fs::perms::all; };
  const mode_t saved_umask = ::umask(027);
  fs::path fresh = Target();
  Status restored = manager->Restore(1, fresh).status();
  fs::path made = scratch_.path() / "made-by-mkdir";
  fs::create_directory(made);
  ::umask(saved_umask);
  ASSERT_TRUE(restored.ok()) << restored.ToString();
  EXPECT_EQ(mode(made), fs::perms(0750));
  EXPECT_EQ(mode(fresh), mode(made)) << "a new folder: 0777 less the umask, as mkdir";
  EXPECT_EQ(mode(fresh / "dir"), mode(made));

  fs::permissions(fresh, fs::perms(0711));
  ASSERT_TRUE(manager->Restore(1, fresh).ok());
  EXPECT_EQ(mode(fresh), fs::perms(0711)) << "an existing folder keeps its mode";
  EXPECT_TRUE(Siblings(fresh).empty());
}

TEST_P(ManagerTest, SavesInMemoryBuffersAndFileLists) {
  auto manager = Manager();
  fs::path loose = scratch_.path() / "elsewhere" / "weights.bin";
  WriteFolder(loose.parent_path(), {{"weights.bin", DeterministicBytes(9, 300000)}});
  CheckpointSource source;
  source.AddBuffer("state/optimizer.bin", DeterministicBytes(8, 1 << 20))
      .AddBuffer("empty", "")
      .AddFile("model/weights.bin", loose);
  ASSERT_TRUE(manager->Save(5, source).ok());
  fs::path target = Target();
  ASSERT_TRUE(manager->Restore(5, target).ok());
  EXPECT_EQ(ReadTree(target), (std::map<std::string, std::string>{
                                    {"state/optimizer.bin", DeterministicBytes(8, 1 << 20)},
                                    {"empty", ""},
                                    {"model/weights.bin", DeterministicBytes(9, 300000)}}));
}

TEST_P(ManagerTest, AStepIsSavedOnce) {
  auto manager = Manager();
  CheckpointSource source;
  source.AddBuffer("x", "1");
  ASSERT_TRUE(manager->Save(3, source).ok());
  EXPECT_EQ(manager->Save(3, source).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(manager->Save(-1, source).status().code(), StatusCode::kInvalidArgument);
  CheckpointSource bad;
  bad.AddBuffer("../x", "1");
  Status refused = manager->Save(4, bad).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("'../x'"), std::string::npos) << refused.message();
}

TEST_P(ManagerTest, AFailedSaveLeavesNoManifestAndDeletesNothing) {
  CheckpointOptions options;
  options.retention.keep_last = 1;
  auto manager = Manager(options);
  CheckpointSource source;
  source.AddBuffer("a", "1").AddBuffer("b", DeterministicBytes(1, 5000));
  ASSERT_TRUE(manager->Save(1, source).ok());
  store_->FailWritesContaining("step-000000000002/save-");
  Status failed = manager->Save(2, source).status();
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.message().find("step 2"), std::string::npos) << failed.message();
  EXPECT_NE(failed.message().find("nothing was committed"), std::string::npos) << failed.message();
  EXPECT_EQ(inner_->Stat(Key("step-000000000002/MANIFEST.json")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(1)) << "retention only runs after a newer commit";
  EXPECT_TRUE(manager->Restore(1, scratch_.path() / "r").ok());
}

TEST_P(ManagerTest, CommitsWithAPlainPutWhereCreateOnlyIsUnimplemented) {
  store_->SetNoConditionalCreate(true);
  auto manager = Manager();
  CheckpointSource source;
  source.AddBuffer("a", "1");
  ASSERT_TRUE(manager->Save(1, source).ok());
  ASSERT_TRUE(manager->Save(2, source).ok());
  EXPECT_EQ(manager->Save(2, source).status().code(), StatusCode::kAlreadyExists) << "the Stat check still holds";
  EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(2));
}

TEST_P(ManagerTest, LatestIgnoresPartialStepsAndLyingHints) {
  auto manager = Manager();
  EXPECT_EQ(*manager->Latest(), std::nullopt);
  EXPECT_EQ(manager->RestoreLatest(scratch_.path() / "r").status().code(), StatusCode::kNotFound);
  CheckpointSource source;
  source.AddBuffer("a", "1");
  ASSERT_TRUE(manager->Save(1, source).ok());
  ASSERT_TRUE(manager->Save(3, source).ok());
  WritePartialStep(9);
  WritePartialStep(2);
  EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(3));
  ASSERT_TRUE(WriteAll(*inner_, Key("LATEST"), "9\n").ok());  // points at a partial step
  EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(3));
  ASSERT_TRUE(WriteAll(*inner_, Key("LATEST"), "12\n").ok());  // points at nothing
  EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(3));
  ASSERT_TRUE(WriteAll(*inner_, Key("LATEST"), "1\n").ok());  // stale
  EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(3));
  ASSERT_TRUE(WriteAll(*inner_, Key("LATEST"), "garbage").ok());
  EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(3));

  Result<std::vector<CheckpointManifest>> listed = manager->List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].step, 1);
  EXPECT_EQ((*listed)[1].step, 3);
  EXPECT_EQ(manager->Restore(9, scratch_.path() / "r").status().code(), StatusCode::kNotFound);
}

TEST_P(ManagerTest, CorruptedFileFailsRestoreAndLeavesTheTargetUntouched) {
  auto manager = Manager();
  CheckpointSource source;
  source.AddBuffer("good.bin", DeterministicBytes(1, 100000)).AddBuffer("model/bad.bin", DeterministicBytes(2, 100000));
  ASSERT_TRUE(manager->Save(7, source).ok());
  // Same size, one byte different: only the checksum can tell.
  std::string tampered = DeterministicBytes(2, 100000);
  tampered[5000] ^= 1;
  ASSERT_TRUE(WriteAll(*inner_, StoredKey(7, "model/bad.bin"), tampered).ok());

  // The target holds an earlier restore of this root, which step 7 may replace.
  CheckpointSource previous;
  previous.AddBuffer("keep.txt", "my previous checkpoint");
  ASSERT_TRUE(manager->Save(6, previous).ok());
  fs::path target = Target();
  ASSERT_TRUE(manager->Restore(6, target).ok());
  std::map<std::string, std::string> before = {{"keep.txt", "my previous checkpoint"}};
  ASSERT_EQ(ReadTree(target), before);
  Status status = manager->Restore(7, target).status();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
  EXPECT_NE(status.message().find("'model/bad.bin'"), std::string::npos) << status.message();
  EXPECT_EQ(ReadTree(target), before);
  EXPECT_TRUE(Siblings(target).empty()) << "the temporary folder is removed";

  Status verified = manager->Verify(7);
  EXPECT_EQ(verified.code(), StatusCode::kDataLoss);
  EXPECT_NE(verified.message().find("'model/bad.bin'"), std::string::npos) << verified.message();

  // A truncated file is caught by its size.
  ASSERT_TRUE(WriteAll(*inner_, StoredKey(7, "good.bin"), "short").ok());
  EXPECT_EQ(manager->Restore(7, target).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ReadTree(target), before);
}

TEST_P(ManagerTest, CraftedManifestCannotWriteOutsideTheFolder) {
  auto manager = Manager();
  fs::path target = scratch_.path() / "jail" / "restored";
  fs::create_directories(target.parent_path());
  for (std::string path : {"../escaped", "../../escaped", "/tmp/spool-escaped", "a/../../escaped", "a\\..\\x"}) {
    SCOPED_TRACE(path);
    ASSERT_TRUE(WriteAll(*inner_, Key("step-000000000001/ok.bin"), "fine").ok());
    std::string json = R"({"format_version": 1, "step": "1", "files": [{"path": "ok.bin", "size": "4",
        "crc32c": 0}, {"path": ")" + [&] {
      std::string escaped;
      for (char c : path) escaped += (c == '\\') ? std::string("\\\\") : std::string(1, c);
      return escaped;
    }() + R"(", "size": "4", "crc32c": 0}]})";
    ASSERT_TRUE(WriteAll(*inner_, Key("step-000000000001/MANIFEST.json"), json).ok());
    Status status = manager->Restore(1, target).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_NE(status.message().find(path.substr(0, 2)), std::string::npos) << status.message();
    EXPECT_FALSE(fs::exists(target));
    EXPECT_TRUE(fs::is_empty(target.parent_path())) << "nothing written beside the target";
    EXPECT_FALSE(fs::exists(scratch_.path() / "escaped"));
    EXPECT_FALSE(fs::exists("/tmp/spool-escaped"));
  }
  EXPECT_TRUE(manager->List()->empty()) << "a manifest with unsafe paths is not listed";
}

TEST_P(ManagerTest, RefusesToReplaceASymbolicLink) {
  auto manager = Manager();
  CheckpointSource source;
  source.AddBuffer("a", "1");
  ASSERT_TRUE(manager->Save(1, source).ok());
  fs::path real = scratch_.path() / "real";
  WriteFolder(real, {{"keep", "x"}});
  fs::path link = scratch_.path() / "link";
  fs::create_directory_symlink(real, link);
  Status status = manager->Restore(1, link).status();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadTree(real), (std::map<std::string, std::string>{{"keep", "x"}}));
}

TEST_P(ManagerTest, SaveAsyncCapturesTheSourceAndWaitReturnsTheResult) {
  auto files = MixedFolder(2);
  fs::path source = scratch_.path() / "source";
  WriteFolder(source, files);
  auto manager = Manager();
  store_->Pause();  // the upload cannot finish before the source changes
  Result<AsyncSaveStart> started = manager->SaveAsync(10, *CheckpointSource::FromFolder(source), {{"k", "v"}});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_TRUE(started->started);
  EXPECT_TRUE(manager->save_in_flight());
  // The trainer moves on: replaces one file, deletes another.
  fs::path replaced = source / "file-1.bin";
  { std::ofstream(source / "tmp") << "rewritten"; }
  fs::rename(source / "tmp", replaced);
  fs::remove(source / "file-2.bin");
  store_->Resume();

  Result<CheckpointManifest> done = manager->Wait();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->step, 10);
  EXPECT_EQ(manager->Wait().status().code(), StatusCode::kFailedPrecondition) << "nothing left to wait for";
  fs::path target = Target();
  ASSERT_TRUE(manager->Restore(10, target).ok());
  EXPECT_EQ(ReadTree(target), files);
  EXPECT_EQ(std::count_if(fs::directory_iterator(scratch_.path()), fs::directory_iterator(),
                          [](const fs::directory_entry& e) {
                            return e.path().filename().string().starts_with(".spool-staging");
                          }),
            0)
      << "the staging folder is removed";
}

TEST_P(ManagerTest, SaveAsyncWaitsOrSkipsWhileASaveIsInFlight) {
  for (auto policy : {CheckpointOptions::WhenBusy::kWait, CheckpointOptions::WhenBusy::kSkip}) {
    SCOPED_TRACE(policy == CheckpointOptions::WhenBusy::kWait ? "wait" : "skip");
    CheckpointOptions options;
    options.when_busy = policy;
    auto manager = Manager(options);
    const int64_t base = policy == CheckpointOptions::WhenBusy::kWait ? 100 : 200;
    store_->Pause();
    CheckpointSource first;
    first.AddBuffer("x", "first");
    ASSERT_TRUE(manager->SaveAsync(base + 1, std::move(first))->started);

    std::atomic<bool> returned{false};
    Result<AsyncSaveStart> second = InternalError("not run");
    std::thread caller([&] {
      CheckpointSource next;
      next.AddBuffer("x", "second");
      second = manager->SaveAsync(base + 2, std::move(next));
      returned = true;
    });
    if (policy == CheckpointOptions::WhenBusy::kSkip) {
      caller.join();
      ASSERT_TRUE(second.ok());
      EXPECT_FALSE(second->started);
      store_->Resume();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_FALSE(returned) << "kWait blocks while the first save is paused";
      store_->Resume();
      caller.join();
      ASSERT_TRUE(second.ok());
      EXPECT_TRUE(second->started);
      EXPECT_TRUE(second->previous.ok());
    }
    ASSERT_TRUE(manager->Wait().ok());
    EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(policy == CheckpointOptions::WhenBusy::kWait ? base + 2
                                                                                                     : base + 1));
  }
}

TEST_P(ManagerTest, AFailedBackgroundSaveIsReported) {
  auto manager = Manager();
  store_->FailWritesContaining("step-000000000001/");
  CheckpointSource source;
  source.AddBuffer("x", "1");
  ASSERT_TRUE(manager->SaveAsync(1, source)->started);
  // Not collected by Wait(): the next SaveAsync reports it.
  Result<AsyncSaveStart> next = manager->SaveAsync(2, source);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->previous.code(), StatusCode::kUnavailable) << next->previous.ToString();
  ASSERT_TRUE(manager->Wait().ok());
  EXPECT_EQ(*manager->Latest(), std::optional<int64_t>(2));
  EXPECT_EQ(inner_->Stat(Key("step-000000000001/MANIFEST.json")).status().code(), StatusCode::kNotFound);

  store_->FailWritesContaining("step-000000000003/");
  ASSERT_TRUE(manager->SaveAsync(3, source)->started);
  EXPECT_EQ(manager->Wait().status().code(), StatusCode::kUnavailable);
}

TEST_P(ManagerTest, ShouldSaveFollowsThePolicy) {
  auto now = std::make_shared<std::chrono::steady_clock::time_point>();
  CheckpointOptions options;
  options.save.every_n_steps = 10;
  options.save.every_duration = std::chrono::seconds(60);
  options.steady_clock = [now] { return *now; };
  auto manager = Manager(options);
  EXPECT_FALSE(manager->ShouldSave(3));
  EXPECT_TRUE(manager->ShouldSave(10));
  CheckpointSource source;
  source.AddBuffer("x", "1");
  ASSERT_TRUE(manager->Save(10, source).ok());
  EXPECT_FALSE(manager->ShouldSave(10));
  EXPECT_FALSE(manager->ShouldSave(15));
  *now += std::chrono::seconds(61);
  EXPECT_TRUE(manager->ShouldSave(15));
}

TEST_P(ManagerTest, RetentionKeepsTheLastKAndOneEveryNHours) {
  auto wall = std::make_shared<std::chrono::system_clock::time_point>(std::chrono::hours(500'000));
  CheckpointOptions options;
  options.retention = {.keep_last = 2, .keep_every_duration = std::chrono::hours(2)};
  options.wall_clock = [wall] { return *wall; };
  auto manager = Manager(options);
  for (int64_t step = 1; step <= 10; ++step) {
    CheckpointSource source;
    source.AddBuffer("w", DeterministicBytes(step, 1000));
    ASSERT_TRUE(manager->Save(step, source).ok());
    *wall += std::chrono::minutes(30);
  }
  EXPECT_EQ(CommittedSteps(*manager), (std::vector<int64_t>{1, 5, 9, 10}));
  // Deleted steps are gone entirely, not just uncommitted.
  ListOptions list;
  list.prefix = Key("step-000000000002/");
  EXPECT_TRUE(ListAll(*inner_, list)->objects.empty());

  Result<std::vector<int64_t>> pruned = manager->Prune(1);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, (std::vector<int64_t>{1, 5, 9}));
  EXPECT_EQ(manager->List()->size(), 1u);
}

TEST_P(ManagerTest, RetentionEveryNSteps) {
  CheckpointOptions options;
  options.retention = {.keep_last = 1, .keep_every_n_steps = 4};
  auto manager = Manager(options);
  for (int64_t step = 1; step <= 10; ++step) {
    CheckpointSource source;
    source.AddBuffer("w", "x");
    ASSERT_TRUE(manager->Save(step, source).ok());
  }
  EXPECT_EQ(CommittedSteps(*manager), (std::vector<int64_t>{1, 5, 9, 10}));
}

TEST_P(ManagerTest, CleanupDeletesOnlyOldPartialSteps) {
  auto wall = std::make_shared<std::chrono::system_clock::time_point>(std::chrono::system_clock::now());
  CheckpointOptions options;
  options.wall_clock = [wall] { return *wall; };
  auto manager = Manager(options);
  CheckpointSource source;
  source.AddBuffer("a", "1");
  ASSERT_TRUE(manager->Save(1, source).ok());
  WritePartialStep(2);
  Result<CleanupReport> early = manager->Cleanup(std::chrono::hours(1));
  ASSERT_TRUE(early.ok()) << early.status().ToString();
  EXPECT_TRUE(early->partial_steps_deleted.empty()) << "a recent partial step may still be uploading";

  *wall += std::chrono::hours(2);
  Result<CleanupReport> late = manager->Cleanup(std::chrono::hours(1));
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->partial_steps_deleted, (std::vector<int64_t>{2}));
  EXPECT_EQ(late->objects_deleted, 1u);
  EXPECT_EQ(inner_->Stat(Key("step-000000000002/model.bin")).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(inner_->Stat(StoredKey(1, "a")).ok()) << "committed steps are never cleaned up";
}

TEST_P(ManagerTest, OpensAStoreFromAUrl) {
  std::string url = GetParam() == StoreKind::kMemory ? "mem://" + root_->bucket() + "/" + root_key_ : "file:///" + root_key_;
  Result<std::unique_ptr<CheckpointManager>> manager = CheckpointManager::Open(url);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  CheckpointSource source;
  source.AddBuffer("a", "via url");
  ASSERT_TRUE((*manager)->Save(4, source).ok());
  EXPECT_EQ(*ReadAll(*inner_, StoredKey(4, "a")), "via url");
  EXPECT_EQ(*Manager()->Latest(), std::optional<int64_t>(4));
}

INSTANTIATE_TEST_SUITE_P(Stores, ManagerTest, ::testing::Values(StoreKind::kMemory, StoreKind::kLocal),
                         [](const auto& info) { return StoreKindName(info.param); });

}  // namespace
}  // namespace spool::checkpoint
