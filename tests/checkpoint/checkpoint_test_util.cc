#include "tests/checkpoint/checkpoint_test_util.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"

namespace spool::testing {

using checkpoint::CheckpointManager;
using checkpoint::CheckpointManifest;

namespace fs = std::filesystem;

std::map<std::string, std::string> CrashStepFiles(int64_t step) {
  std::map<std::string, std::string> files;
  const uint64_t s = static_cast<uint64_t>(step);
  files["model.ckpt.index"] = DeterministicBytes(s * 10 + 1, 100 + s % 977);
  files["model.ckpt.data-00000-of-00002"] = DeterministicBytes(s * 10 + 2, 200000 + (s * 7919) % 300000);
  files["model.ckpt.data-00001-of-00002"] = DeterministicBytes(s * 10 + 3, (s * 104729) % 150000);
  files["optimizer/state.bin"] = DeterministicBytes(s * 10 + 4, 50000 + s % 13);
  files["empty"] = "";
  files["step.txt"] = std::to_string(step) + "\n";
  return files;
}

void WriteFolder(const fs::path& folder, const std::map<std::string, std::string>& files) {
  fs::remove_all(folder);
  for (const auto& [path, bytes] : files) {
    fs::path file = folder / path;
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + file.string());
  }
  fs::create_directories(folder);
}

void FaultyStore::FailWritesContaining(std::string text) {
  std::lock_guard lock(mu_);
  fail_text_ = std::move(text);
}

void FaultyStore::Pause() {
  std::lock_guard lock(mu_);
  paused_ = true;
}

void FaultyStore::Resume() {
  {
    std::lock_guard lock(mu_);
    paused_ = false;
  }
  cv_.notify_all();
}

namespace {

// Fails at Close, after the bytes went out, as a dropped upload would.
class FailingWriter : public WritableObject {
 public:
  FailingWriter(std::unique_ptr<WritableObject> inner, std::string url) : inner_(std::move(inner)), url_(url) {}
  Status Append(std::string_view data) override { return inner_->Append(data); }
  Result<ObjectInfo> Close() override {
    inner_->Abort();
    return UnavailableError("injected upload failure for " + url_);
  }
  void Abort() override { inner_->Abort(); }
  uint64_t bytes_appended() const override { return inner_->bytes_appended(); }

 private:
  std::unique_ptr<WritableObject> inner_;
  std::string url_;
};

}  // namespace

Result<std::unique_ptr<WritableObject>> FaultyStore::OpenWrite(std::string_view key, const WriteOptions& options) {
  return Faulty(key, options, [&] { return inner().OpenWrite(key, options); });
}

Result<std::unique_ptr<WritableObject>> FaultyStore::OpenResumableUpload(std::string_view key,
                                                                         const WriteOptions& options,
                                                                         const ResumeOptions& resume) {
  return Faulty(key, options, [&] { return inner().OpenResumableUpload(key, options, resume); });
}

Result<std::unique_ptr<WritableObject>> FaultyStore::Faulty(
    std::string_view key, const WriteOptions& options,
    const std::function<Result<std::unique_ptr<WritableObject>>()>& open) {
  std::string fail_text;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !paused_; });
    fail_text = fail_text_;
  }
  ++writes_opened_;
  if (options.if_not_exists && no_conditional_create_) {
    return UnimplementedError(Describe(key) + ": create-only writes are not supported by this store");
  }
  SPOOL_ASSIGN_OR_RETURN(auto writer, open());
  if (!fail_text.empty() && key.find(fail_text) != std::string_view::npos) {
    return std::unique_ptr<WritableObject>(new FailingWriter(std::move(writer), Describe(key)));
  }
  return writer;
}

TestRoot::TestRoot(StoreKind kind, const std::filesystem::path& scratch, std::string_view bucket_prefix) {
  static std::atomic<int> counter{0};
  if (kind == StoreKind::kMemory) {
    bucket_ = std::string(bucket_prefix) + "-" + std::to_string(counter++);
    store = std::make_shared<MemoryStore>(bucket_);
    root_key = "runs/7";
  } else {
    store = std::make_shared<LocalStore>();
    root_key = (scratch / "store" / "runs" / "7").string().substr(1);
  }
}

TestRoot::~TestRoot() {
  if (!bucket_.empty()) MemoryStore::ClearBucket(bucket_);
}

std::string StoreKindName(StoreKind kind) { return kind == StoreKind::kMemory ? "Memory" : "Local"; }

std::vector<int64_t> CommittedSteps(CheckpointManager& manager) {
  Result<std::vector<CheckpointManifest>> listed = manager.List();
  EXPECT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<int64_t> steps;
  if (listed.ok()) {
    for (const auto& manifest : *listed) steps.push_back(manifest.step);
  }
  return steps;
}

}  // namespace spool::testing
