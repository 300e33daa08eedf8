// Helpers shared by the checkpoint tests and the crash-test saver:
// deterministic content, folders of files and a store wrapper that injects
// failures and pauses. Temporary folders and reading a folder back are in
// tests/support.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/storage/object_store.h"

namespace spool::testing {

// `size` pseudo-random bytes, the same for the same seed.
std::string DeterministicBytes(uint64_t seed, uint64_t size);

// The files (relative path -> bytes) that step `step` of the crash test
// saves: a few files of step-dependent sizes, one of them empty.
std::map<std::string, std::string> CrashStepFiles(int64_t step);

// Writes `files` under `folder` (created), replacing what was there.
void WriteFolder(const std::filesystem::path& folder, const std::map<std::string, std::string>& files);

// Where the manager tests save: a fresh in-memory bucket, or the local store
// under `scratch`; the memory bucket is cleared on destruction.
enum class StoreKind { kMemory, kLocal };
class TestRoot {
 public:
  TestRoot(StoreKind kind, const std::filesystem::path& scratch, std::string_view bucket_prefix);
  ~TestRoot();
  TestRoot(const TestRoot&) = delete;
  TestRoot& operator=(const TestRoot&) = delete;

  std::shared_ptr<ObjectStore> store;
  std::string root_key;  // checkpoints go under it
  const std::string& bucket() const { return bucket_; }  // empty for the local store

 private:
  std::string bucket_;
};
// "Memory" or "Local", for naming parameterised tests.
std::string StoreKindName(StoreKind kind);

// The steps `manager` lists as committed, oldest first (a failed List is a
// test failure).
std::vector<int64_t> CommittedSteps(CheckpointManager& manager);

// Forwards to another store, with faults on demand:
// - fail_writes_containing: Close of a key containing it fails (Unavailable);
// - no_conditional_create: OpenWrite with if_not_exists is Unimplemented
//   (as on Ceph RGW 16);
// - Pause()/Resume(): OpenWrite blocks while paused.
class FaultyStore : public ObjectStore {
 public:
  explicit FaultyStore(std::shared_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}

  void FailWritesContaining(std::string text);
  void SetNoConditionalCreate(bool value) { no_conditional_create_ = value; }
  void Pause();
  void Resume();
  int writes_opened() const { return writes_opened_; }

  std::string Describe(std::string_view key) const override { return inner_->Describe(key); }
  Result<ObjectInfo> Stat(std::string_view key) override { return inner_->Stat(key); }
  Result<ListPage> List(const ListOptions& options) override { return inner_->List(options); }
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override { return inner_->OpenRead(key); }
  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key, const WriteOptions& options = {}) override;
  Status Delete(std::string_view key) override { return inner_->Delete(key); }

 private:
  std::shared_ptr<ObjectStore> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool paused_ = false;
  std::string fail_text_;
  std::atomic<bool> no_conditional_create_{false};
  std::atomic<int> writes_opened_{0};
};

}  // namespace spool::testing
