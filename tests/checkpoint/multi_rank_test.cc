// Checkpoints saved by several ranks (threads with a manager each) on the
// memory and local-file stores: the commit protocol, per-rank restore,
// missing and stale parts, the barrier, and the single-writer format.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <optional>
#include <thread>

#include "spool/checkpoint/checkpoint_manager.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/checkpoint/multi_rank_scenarios.h"
#include "tests/support/files.h"
#include "tests/support/forwarding_store.h"
#include "tests/support/temp_dir.h"

namespace spool::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::CommittedSteps;
using testing::FaultyStore;
using testing::RankFiles;
using testing::RankOptions;
using testing::RunRanks;
using testing::StoreKind;
using testing::StoreKindName;
using testing::TestRoot;
using test_support::ReadTree;
using test_support::TempDir;

CheckpointSource Buffers(const std::map<std::string, std::string>& files) {
  CheckpointSource source;
  for (const auto& [path, bytes] : files) source.AddBuffer(path, bytes);
  return source;
}

class MultiRankTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override { root_.emplace(GetParam(), scratch_.path(), "ckpt-multi-rank"); }
  void TearDown() override { root_.reset(); }

  std::unique_ptr<CheckpointManager> Manager(CheckpointOptions options,
                                             std::shared_ptr<ObjectStore> store = nullptr) {
    auto manager = std::make_unique<CheckpointManager>(store ? store : root_->store, root_->root_key,
                                                       std::move(options));
    EXPECT_TRUE(manager->Start().ok());
    return manager;
  }

  TempDir scratch_{"spool-ckpt-multi-rank"};
  std::optional<TestRoot> root_;
};

TEST_P(MultiRankTest, ConcurrentRanksRestoreByteIdentical) {
  testing::ConcurrentRanksRestoreByteIdentical(root_->store, root_->root_key, scratch_.path());
}

TEST_P(MultiRankTest, MissingRanksTimeOutAndLeftoversAreCleaned) {
  testing::MissingRanksTimeOutAndLeftoversAreCleaned(root_->store, root_->root_key, scratch_.path());
}

TEST_P(MultiRankTest, StalePartOfAnEarlierAttemptIsNotCommitted) {
  testing::StalePartOfAnEarlierAttemptIsNotCommitted(root_->store, root_->root_key, scratch_.path());
}

// Without an attempt to tell runs apart, rank 0 ignores parts written before
// it started (the COMMITTER marker, on the store's clock).
TEST_P(MultiRankTest, WithoutAnAttemptPartsOlderThanRankZeroAreIgnored) {
  Manager(RankOptions(1, 2, ""))->Save(5, Buffers(RankFiles(5, 1))).status().IgnoreError();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a later mtime than the stale part
  auto rank0 = Manager(RankOptions(0, 2, "", std::chrono::seconds(1)));
  auto alone = rank0->Save(5, Buffers(RankFiles(105, 0)));
  EXPECT_EQ(alone.status().code(), StatusCode::kDeadlineExceeded) << alone.status().ToString();
  EXPECT_NE(alone.status().message().find("rank 1 of 2"), std::string::npos) << alone.status().ToString();

  // The restarted rank 1 removes its stale part when it starts, then saves.
  RunRanks(2, [&](int rank) {
    auto manager = rank == 0 ? std::move(rank0) : Manager(RankOptions(1, 2, ""));
    auto saved = manager->Save(6, Buffers(RankFiles(106, rank)));
    EXPECT_TRUE(saved.ok()) << saved.status().ToString();
  });
  auto reader = Manager(RankOptions(1, 2, ""));
  EXPECT_EQ(CommittedSteps(*reader), std::vector<int64_t>{6});
  ASSERT_TRUE(reader->Restore(6, scratch_.path() / "out").ok());
  EXPECT_EQ(ReadTree(scratch_.path() / "out"), RankFiles(106, 1));
  CheckpointLayout layout(root_->root_key);
  EXPECT_EQ(root_->store->Stat(layout.PartKey(5, 1)).status().code(), StatusCode::kNotFound);
}

TEST_P(MultiRankTest, BarrierReplacesPolling) {
  constexpr int kWorld = 3;
  std::barrier<> sync(kWorld);
  auto barrier = [&]() -> Status {
    sync.arrive_and_wait();
    return OkStatus();
  };
  RunRanks(kWorld, [&](int rank) {
    CheckpointOptions options = RankOptions(rank, kWorld);
    options.barrier = barrier;
    auto manager = Manager(options);
    for (int64_t step : {1, 2}) {
      auto saved = manager->Save(step, Buffers(RankFiles(step, rank)));
      EXPECT_TRUE(saved.ok()) << saved.status().ToString();
    }
  });
  EXPECT_EQ(CommittedSteps(*Manager(RankOptions(0, kWorld))), (std::vector<int64_t>{1, 2}));

  // A rank whose upload fails still reaches the barrier; rank 0 then names
  // it and commits nothing.
  auto faulty = std::make_shared<FaultyStore>(root_->store);
  faulty->FailWritesContaining("rank-00001/");
  Status rank0;
  RunRanks(kWorld, [&](int rank) {
    CheckpointOptions options = RankOptions(rank, kWorld);
    options.barrier = barrier;
    auto saved = Manager(options, faulty)->Save(3, Buffers(RankFiles(3, rank)));
    if (rank == 0) rank0 = saved.status();
    if (rank == 1) {
      EXPECT_FALSE(saved.ok());
    }
  });
  EXPECT_EQ(rank0.code(), StatusCode::kFailedPrecondition) << rank0.ToString();
  EXPECT_NE(rank0.message().find("rank 1 of 3"), std::string::npos) << rank0.ToString();
  auto reader = Manager(RankOptions(0, kWorld));
  auto latest = reader->Latest();
  ASSERT_TRUE(latest.ok() && *latest);
  EXPECT_EQ(**latest, 2);
}

// Fails the first `times` reads of listed part files with `fault`: a part
// replaced between rank 0's LIST and its GET (HTTP 412 to the read's
// If-Match), or deleted in between (NotFound).
class PartReadFaults : public test_support::ForwardingStore {
 public:
  PartReadFaults(std::shared_ptr<ObjectStore> inner, Status fault, int times)
      : ForwardingStore(std::move(inner)), fault_(std::move(fault)), left_(times) {}

  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed) override {
    if (listed.key.find("/parts/") != std::string::npos && left_.fetch_sub(1) > 0) {
      ++faults_;
      return fault_;
    }
    return ForwardingStore::OpenListed(listed);
  }
  int faults() const { return faults_; }

 private:
  const Status fault_;
  std::atomic<int> left_;
  std::atomic<int> faults_{0};
};

TEST_P(MultiRankTest, APartChangedOrGoneSinceTheListingIsReadAgainAtTheNextPoll) {
  const Status changed = FailedPreconditionError("part changed").WithRemote({412, "PreconditionFailed", ""});
  int64_t step = 0;
  for (const Status& fault : {changed, NotFoundError("part gone")}) {
    ++step;
    ASSERT_TRUE(Manager(RankOptions(1, 2))->Save(step, Buffers(RankFiles(step, 1))).ok());
    // The part keeps the version rank 0 listed: skipping it without
    // forgetting that version would wait out the part timeout.
    auto store = std::make_shared<PartReadFaults>(root_->store, fault, 2);
    auto saved =
        Manager(RankOptions(0, 2, "run-1", std::chrono::seconds(10)), store)->Save(step, Buffers(RankFiles(step, 0)));
    EXPECT_TRUE(saved.ok()) << fault.ToString() << ": " << saved.status().ToString();
    EXPECT_EQ(store->faults(), 2) << fault.ToString();
  }
  EXPECT_EQ(CommittedSteps(*Manager(RankOptions(0, 2))), (std::vector<int64_t>{1, 2}));

  // Any other error is the poll's: rank 0 fails with it, and commits nothing.
  ASSERT_TRUE(Manager(RankOptions(1, 2))->Save(3, Buffers(RankFiles(3, 1))).ok());
  auto denied = std::make_shared<PartReadFaults>(root_->store, PermissionDeniedError("no access to parts"), 1000);
  auto refused =
      Manager(RankOptions(0, 2, "run-1", std::chrono::seconds(10)), denied)->Save(3, Buffers(RankFiles(3, 0)));
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied) << refused.status().ToString();
  EXPECT_EQ(CommittedSteps(*Manager(RankOptions(0, 2))), (std::vector<int64_t>{1, 2}));
}

// world_size 1 writes format 1 exactly as before, and a rank of a larger job
// restores such a checkpoint whole.
TEST_P(MultiRankTest, SingleWriterFormatIsUnchangedAndRestoresOnAnyRank) {
  auto single = Manager(CheckpointOptions{});
  auto saved = single->Save(7, Buffers(RankFiles(7, 0)), {{"loader", "x"}});
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->format_version, kManifestFormatVersion);
  CheckpointLayout layout(root_->root_key);
  auto json = ReadAll(*root_->store, layout.ManifestKey(7));
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find("\"format_version\": 1"), std::string::npos) << *json;
  EXPECT_EQ(json->find("ranks\": [{"), std::string::npos) << *json;
  // The file is where the manifest says: under the save's own folder.
  for (const CheckpointFile& file : saved->files) {
    EXPECT_EQ(file.stored_path.rfind("save-", 0), 0u) << file.stored_path;
    EXPECT_TRUE(root_->store->Stat(layout.FileKey(7, file.object_path())).ok()) << file.object_path();
  }

  auto rank2 = Manager(RankOptions(2, 4));
  auto restored = rank2->Restore(7, scratch_.path() / "single");
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(ReadTree(scratch_.path() / "single"), RankFiles(7, 0));
  EXPECT_EQ(restored->metadata.at("loader"), "x");
  ASSERT_TRUE(rank2->RestoreRank(7, 3, scratch_.path() / "single-any").ok());
  EXPECT_EQ(ReadTree(scratch_.path() / "single-any"), RankFiles(7, 0));
}

TEST_P(MultiRankTest, RankPrefixFanoutSavesRestoresVerifiesAndPrunes) {
  testing::RankPrefixFanoutSavesRestoresVerifiesAndPrunes(root_->store, root_->root_key, scratch_.path());
}

TEST_P(MultiRankTest, RankOutsideTheWorldIsRefused) {
  auto manager = std::make_unique<CheckpointManager>(root_->store, root_->root_key, RankOptions(4, 4));
  EXPECT_EQ(manager->Start().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(manager->Save(1, Buffers(RankFiles(1, 0))).status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Stores, MultiRankTest, ::testing::Values(StoreKind::kMemory, StoreKind::kLocal),
                         [](const auto& info) { return StoreKindName(info.param); });

}  // namespace
}  // namespace spool::checkpoint
