// Helpers shared by the checkpoint tests and the crash-test saver: folders
// of files and a store wrapper that injects failures and pauses. Temporary
// folders, deterministic bytes, reading a folder back and the forwarding
// store are in tests/support.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/storage/object_store.h"
#include "tests/support/bytes.h"
#include "tests/support/forwarding_store.h"

namespace spool::testing {

using test_support::DeterministicBytes;

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
std::vector<int64_t> CommittedSteps(checkpoint::CheckpointManager& manager);

// Forwards to another store, with faults on demand, in every call that opens
// a writer (OpenWrite and OpenResumableUpload):
// - fail_writes_containing: Close of a key containing it fails (Unavailable);
// - no_conditional_create: a write with if_not_exists is Unimplemented
//   (as on Ceph RGW 16);
// - Pause()/Resume(): opening a writer blocks while paused.
class FaultyStore : public test_support::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

  void FailWritesContaining(std::string text);
  void SetNoConditionalCreate(bool value) { no_conditional_create_ = value; }
  void Pause();
  void Resume();
  int writes_opened() const { return writes_opened_; }

  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key, const WriteOptions& options = {}) override;
  Result<std::unique_ptr<WritableObject>> OpenResumableUpload(std::string_view key, const WriteOptions& options,
                                                              const ResumeOptions& resume) override;

 private:
  // The faults around opening a writer with `open`.
  Result<std::unique_ptr<WritableObject>> Faulty(std::string_view key, const WriteOptions& options,
                                                 const std::function<Result<std::unique_ptr<WritableObject>>()>& open);

  std::mutex mu_;
  std::condition_variable cv_;
  bool paused_ = false;
  std::string fail_text_;
  std::atomic<bool> no_conditional_create_{false};
  std::atomic<int> writes_opened_{0};
};

}  // namespace spool::testing
