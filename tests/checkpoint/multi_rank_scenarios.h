// Multi-rank checkpoint scenarios shared by the unit test (memory and local
// stores) and the Ceph RGW test: every rank is a thread with a
// CheckpointManager of its own on the same store and root, as separate
// processes would be.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/storage/object_store.h"

namespace spool::testing {

// The options of rank `rank` of `world` for attempt `attempt`.
checkpoint::CheckpointOptions RankOptions(int rank, int world, std::string attempt = "run-1",
                                          std::chrono::seconds part_timeout = std::chrono::seconds(120));

// What rank `rank` saves at `step`: files of step- and rank-dependent sizes,
// one of them empty, one in a subfolder.
std::map<std::string, std::string> RankFiles(int64_t step, int rank);

// Runs body(rank) for every rank on threads of its own, all at once, and
// waits for them.
void RunRanks(int world, const std::function<void(int rank)>& body);

// 4 ranks save steps 10, 20, 30 concurrently (even ranks from a folder
// through SaveAsync, odd ranks from buffers through Save; each starting in
// its own order); every step commits, lists world size 4, restores
// byte-identical per rank with that rank's metadata, and restores whole
// with kAllRanks. ReadManifest gives every rank's metadata.
void ConcurrentRanksRestoreByteIdentical(std::shared_ptr<ObjectStore> store, const std::string& root,
                                         const std::filesystem::path& scratch);

// Ranks 1 and 3 of 4 never save step 20: rank 0 gives up after the part
// timeout with DeadlineExceeded naming them, step 20 stays invisible and
// step 10 latest, and Cleanup removes what the others left.
void MissingRanksTimeOutAndLeftoversAreCleaned(std::shared_ptr<ObjectStore> store, const std::string& root,
                                               const std::filesystem::path& scratch);

// A part of step 5 left by attempt "run-1" (its job was killed) is never
// committed by attempt "run-2": rank 0 of run-2 times out naming rank 1
// until rank 1 of run-2 saves, and what commits restores run-2's bytes.
void StalePartOfAnEarlierAttemptIsNotCommitted(std::shared_ptr<ObjectStore> store, const std::string& root,
                                               const std::filesystem::path& scratch);

// 8 ranks with rank_prefix_fanout 4 save steps 1 and 2: each rank's files
// are under step-.../<FanoutLabel(rank, 4)>/rank-0000R/, 4 distinct folders
// per step; the manifest's paths stay rank-0000R/...; a manager without the
// option verifies, restores every rank byte-identical (and kAllRanks), and
// Prune(1) removes step 1 entirely. A fan-out out of range is refused.
void RankPrefixFanoutSavesRestoresVerifiesAndPrunes(std::shared_ptr<ObjectStore> store, const std::string& root,
                                                    const std::filesystem::path& scratch);

}  // namespace spool::testing
