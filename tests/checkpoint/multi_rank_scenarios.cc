#include "tests/checkpoint/multi_rank_scenarios.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "spool/core/key_fanout.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/support/files.h"

namespace spool::testing {

using checkpoint::CheckpointFile;
using checkpoint::CheckpointLayout;
using checkpoint::CheckpointManager;
using checkpoint::CheckpointManifest;
using checkpoint::CheckpointMetadata;
using checkpoint::CheckpointOptions;
using checkpoint::CheckpointSource;
using checkpoint::kAllRanks;
using checkpoint::kMultiRankManifestFormatVersion;

namespace fs = std::filesystem;
using test_support::ReadTree;

namespace {

CheckpointSource Buffers(const std::map<std::string, std::string>& files) {
  CheckpointSource source;
  for (const auto& [path, bytes] : files) source.AddBuffer(path, bytes);
  return source;
}

std::unique_ptr<CheckpointManager> Manager(const std::shared_ptr<ObjectStore>& store, const std::string& root,
                                           CheckpointOptions options) {
  auto manager = std::make_unique<CheckpointManager>(store, root, std::move(options));
  EXPECT_TRUE(manager->Start().ok());
  return manager;
}

CheckpointMetadata RankMetadata(int64_t step, int rank) {
  return {{"loader", "state-of-rank-" + std::to_string(rank) + "-at-" + std::to_string(step)},
          {"rank", std::to_string(rank)}};
}

}  // namespace

CheckpointOptions RankOptions(int rank, int world, std::string attempt, std::chrono::seconds part_timeout) {
  CheckpointOptions options;
  options.rank = rank;
  options.world_size = world;
  options.attempt = std::move(attempt);
  options.part_timeout = part_timeout;
  return options;
}

std::map<std::string, std::string> RankFiles(int64_t step, int rank) {
  const uint64_t seed = static_cast<uint64_t>(step) * 1000 + static_cast<uint64_t>(rank);
  return {{"model.bin", DeterministicBytes(seed, 1000 + 37 * rank + static_cast<uint64_t>(step))},
          {"optimizer/state.bin", DeterministicBytes(seed + 7, (300 << 10) + 11 * rank)},
          {"empty", ""}};
}

void RunRanks(int world, const std::function<void(int rank)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

void ConcurrentRanksRestoreByteIdentical(std::shared_ptr<ObjectStore> store, const std::string& root,
                                         const fs::path& scratch) {
  constexpr int kWorld = 4;
  const std::vector<int64_t> steps = {10, 20, 30};
  RunRanks(kWorld, [&](int rank) {
    auto manager = Manager(store, root, RankOptions(rank, kWorld));
    // Each rank walks the steps; rank 3 starts while the others are already
    // done with step 10, so parts arrive in every order.
    for (int64_t step : steps) {
      if (rank % 2 == 0) {
        const fs::path folder = scratch / ("source-" + std::to_string(rank));
        WriteFolder(folder, RankFiles(step, rank));
        auto source = CheckpointSource::FromFolder(folder);
        ASSERT_TRUE(source.ok()) << source.status().ToString();
        auto started = manager->SaveAsync(step, std::move(*source), RankMetadata(step, rank));
        ASSERT_TRUE(started.ok()) << started.status().ToString();
        auto saved = manager->Wait();
        ASSERT_TRUE(saved.ok()) << "rank " << rank << " step " << step << ": " << saved.status().ToString();
      } else {
        auto saved = manager->Save(step, Buffers(RankFiles(step, rank)), RankMetadata(step, rank));
        ASSERT_TRUE(saved.ok()) << "rank " << rank << " step " << step << ": " << saved.status().ToString();
        EXPECT_EQ(saved->format_version, kMultiRankManifestFormatVersion);
      }
    }
  });

  auto reader = Manager(store, root, RankOptions(0, kWorld));
  auto listed = reader->List();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const CheckpointManifest& manifest = (*listed)[i];
    EXPECT_EQ(manifest.step, steps[i]);
    EXPECT_EQ(manifest.format_version, kMultiRankManifestFormatVersion);
    EXPECT_EQ(manifest.world_size, kWorld);
    ASSERT_EQ(manifest.ranks.size(), static_cast<size_t>(kWorld));
    EXPECT_EQ(manifest.files.size(), 3u * kWorld);
    EXPECT_EQ(manifest.metadata, RankMetadata(steps[i], 0));
    for (int rank = 0; rank < kWorld; ++rank) EXPECT_EQ(manifest.ranks[rank].metadata, RankMetadata(steps[i], rank));
    EXPECT_TRUE(reader->Verify(steps[i]).ok());
  }
  auto latest = reader->Latest();
  ASSERT_TRUE(latest.ok() && *latest);
  EXPECT_EQ(**latest, 30);

  // Every rank restores its own files and metadata; any rank can restore
  // rank 0's; kAllRanks gives the stored layout.
  for (int64_t step : steps) {
    for (int rank = 0; rank < kWorld; ++rank) {
      auto manager = Manager(store, root, RankOptions(rank, kWorld));
      const fs::path target = scratch / "restored" / ("rank-" + std::to_string(rank));
      auto restored = manager->Restore(step, target);
      ASSERT_TRUE(restored.ok()) << restored.status().ToString();
      EXPECT_EQ(ReadTree(target), RankFiles(step, rank)) << "step " << step << " rank " << rank;
      EXPECT_EQ(restored->metadata, RankMetadata(step, rank));
      EXPECT_EQ(restored->ranks.size(), static_cast<size_t>(kWorld));
    }
    auto any = Manager(store, root, RankOptions(3, kWorld));
    const fs::path shared = scratch / "restored" / "shared";
    ASSERT_TRUE(any->RestoreRank(step, 0, shared).ok());
    EXPECT_EQ(ReadTree(shared), RankFiles(step, 0));
    const fs::path all = scratch / "restored" / "all";
    ASSERT_TRUE(any->RestoreRank(step, kAllRanks, all).ok());
    std::map<std::string, std::string> expected;
    for (int rank = 0; rank < kWorld; ++rank) {
      for (const auto& [path, bytes] : RankFiles(step, rank)) {
        expected[CheckpointLayout::RankFolder(rank) + "/" + path] = bytes;
      }
    }
    EXPECT_EQ(ReadTree(all), expected);
    auto missing = any->RestoreRank(step, kWorld, scratch / "restored" / "none");
    EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  }
}

void MissingRanksTimeOutAndLeftoversAreCleaned(std::shared_ptr<ObjectStore> store, const std::string& root,
                                               const fs::path& scratch) {
  constexpr int kWorld = 4;
  RunRanks(kWorld, [&](int rank) {
    auto manager = Manager(store, root, RankOptions(rank, kWorld));
    ASSERT_TRUE(manager->Save(10, Buffers(RankFiles(10, rank)), RankMetadata(10, rank)).ok());
  });
  Status rank0;
  RunRanks(kWorld, [&](int rank) {
    if (rank == 1 || rank == 3) return;  // "died" before saving step 20
    auto manager = Manager(store, root, RankOptions(rank, kWorld, "run-1", std::chrono::seconds(1)));
    auto saved = manager->Save(20, Buffers(RankFiles(20, rank)), RankMetadata(20, rank));
    if (rank == 0) rank0 = saved.status();
    if (rank == 2) {
      EXPECT_TRUE(saved.ok()) << saved.status().ToString();
    }
  });
  EXPECT_EQ(rank0.code(), StatusCode::kDeadlineExceeded) << rank0.ToString();
  EXPECT_NE(rank0.message().find("step 20: ranks 1, 3 of 4 did not finish their part within 1 s"), std::string::npos)
      << rank0.ToString();

  auto reader = Manager(store, root, RankOptions(0, kWorld));
  auto latest = reader->Latest();
  ASSERT_TRUE(latest.ok() && *latest);
  EXPECT_EQ(**latest, 10);
  EXPECT_EQ(CommittedSteps(*reader), std::vector<int64_t>{10});
  EXPECT_EQ(reader->Restore(20, scratch / "never").status().code(), StatusCode::kNotFound);

  // Rank 2's files and part are still there; gc removes them.
  CheckpointLayout layout(root);
  ListOptions options;
  options.prefix = layout.StepPrefix(20);
  auto before = ListAll(*store, options);
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(before->objects.empty());
  auto cleaned = reader->Cleanup(std::chrono::seconds(0));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
  EXPECT_EQ(cleaned->partial_steps_deleted, std::vector<int64_t>{20});
  auto after = ListAll(*store, options);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->objects.empty());
  EXPECT_EQ(CommittedSteps(*reader), std::vector<int64_t>{10});
}

void StalePartOfAnEarlierAttemptIsNotCommitted(std::shared_ptr<ObjectStore> store, const std::string& root,
                                               const fs::path& scratch) {
  constexpr int kWorld = 2;
  // Run 1: rank 1 wrote its part of step 5, then the job was killed before
  // rank 0 saved.
  {
    auto rank1 = Manager(store, root, RankOptions(1, kWorld, "run-1"));
    ASSERT_TRUE(rank1->Save(5, Buffers(RankFiles(5, 1)), RankMetadata(5, 1)).ok());
  }
  // Run 2: rank 0 alone must not take run 1's part.
  {
    auto rank0 = Manager(store, root, RankOptions(0, kWorld, "run-2", std::chrono::seconds(1)));
    auto saved = rank0->Save(5, Buffers(RankFiles(105, 0)), RankMetadata(105, 0));
    EXPECT_EQ(saved.status().code(), StatusCode::kDeadlineExceeded) << saved.status().ToString();
    EXPECT_NE(saved.status().message().find("rank 1 of 2 did not finish"), std::string::npos)
        << saved.status().ToString();
    auto latest = rank0->Latest();
    ASSERT_TRUE(latest.ok());
    EXPECT_FALSE(*latest);
  }
  // Run 2, both ranks: what commits is run 2's.
  RunRanks(kWorld, [&](int rank) {
    auto manager = Manager(store, root, RankOptions(rank, kWorld, "run-2"));
    auto saved = manager->Save(5, Buffers(RankFiles(105, rank)), RankMetadata(105, rank));
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  });
  auto reader = Manager(store, root, RankOptions(1, kWorld, "run-2"));
  const fs::path target = scratch / "stale-restored";
  auto restored = reader->Restore(5, target);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(ReadTree(target), RankFiles(105, 1));
  EXPECT_EQ(restored->metadata, RankMetadata(105, 1));
  EXPECT_EQ(restored->ranks[1].attempt, "run-2");
}

void RankPrefixFanoutSavesRestoresVerifiesAndPrunes(std::shared_ptr<ObjectStore> store, const std::string& root,
                                                    const fs::path& scratch) {
  constexpr int kWorld = 8;
  constexpr int kFanout = 4;
  auto fanned = [&](int rank) {
    CheckpointOptions options = RankOptions(rank, kWorld);
    options.rank_prefix_fanout = kFanout;
    return options;
  };
  for (int64_t step : {1, 2}) {
    RunRanks(kWorld, [&](int rank) {
      auto manager = Manager(store, root, fanned(rank));
      auto saved = manager->Save(step, Buffers(RankFiles(step, rank)), RankMetadata(step, rank));
      ASSERT_TRUE(saved.ok()) << "rank " << rank << " step " << step << ": " << saved.status().ToString();
    });
  }

  const CheckpointLayout layout(root);
  for (int64_t step : {1, 2}) {
    // Where the objects are: each rank's under its label, 4 labels in all.
    ListOptions list;
    list.prefix = layout.StepPrefix(step);
    auto listed = ListAll(*store, list);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    std::set<std::string> folders;
    std::map<int, int> files_of_rank;
    for (const ObjectInfo& object : listed->objects) {
      const std::string relative = object.key.substr(list.prefix.size());
      if (relative.starts_with("parts/") || relative == "MANIFEST.json") continue;
      bool placed = false;
      for (int rank = 0; rank < kWorld; ++rank) {
        const std::string folder =
            FanoutLabel(static_cast<uint64_t>(rank), kFanout) + "/" + CheckpointLayout::RankFolder(rank) + "/";
        if (relative.starts_with(folder)) {
          ++files_of_rank[rank];
          folders.insert(relative.substr(0, relative.find('/')));
          placed = true;
        }
      }
      EXPECT_TRUE(placed) << object.key << " is not under its rank's fanned-out folder";
    }
    EXPECT_EQ(folders.size(), static_cast<size_t>(kFanout));
    for (int rank = 0; rank < kWorld; ++rank) EXPECT_EQ(files_of_rank[rank], 3) << "rank " << rank;
  }

  // A reader without the option: the manifest says where everything is.
  auto reader = Manager(store, root, RankOptions(0, kWorld));
  for (int64_t step : {1, 2}) {
    auto manifest = reader->ReadManifest(step);
    ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
    for (const CheckpointFile& file : manifest->files) {
      EXPECT_TRUE(file.path.starts_with("rank-")) << file.path;
      EXPECT_EQ(file.object_path().substr(2, 6), "/rank-") << file.object_path();
    }
    EXPECT_TRUE(reader->Verify(step).ok());
    for (int rank = 0; rank < kWorld; ++rank) {
      const fs::path target = scratch / "fanout-restored" / (std::to_string(step) + "-" + std::to_string(rank));
      auto restored = reader->RestoreRank(step, rank, target);
      ASSERT_TRUE(restored.ok()) << restored.status().ToString();
      EXPECT_EQ(ReadTree(target), RankFiles(step, rank)) << "step " << step << " rank " << rank;
      EXPECT_EQ(restored->metadata, RankMetadata(step, rank));
    }
    const fs::path all = scratch / "fanout-restored" / ("all-" + std::to_string(step));
    ASSERT_TRUE(reader->RestoreRank(step, kAllRanks, all).ok());
    EXPECT_EQ(ReadTree(all).size(), 3u * kWorld);
  }

  auto pruned = reader->Prune(1);
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(*pruned, std::vector<int64_t>{1});
  ListOptions step1;
  step1.prefix = layout.StepPrefix(1);
  EXPECT_TRUE(ListAll(*store, step1).value().objects.empty()) << "gc left objects of step 1";
  EXPECT_TRUE(reader->Verify(2).ok());

  CheckpointOptions too_many = fanned(0);
  too_many.rank_prefix_fanout = kMaxPrefixFanout + 1;
  CheckpointManager refused(store, root, too_many);
  EXPECT_EQ(refused.Start().code(), StatusCode::kInvalidArgument);
}

}  // namespace spool::testing
