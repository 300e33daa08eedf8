// The preemption hook: PreemptionNotice (signal, deadline) and
// CheckpointManager::SaveBeforeDeadline on the memory and local-file stores.
#include "spool/checkpoint/preemption.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <optional>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/cancel.h"
#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/support/forwarding_store.h"
#include "tests/support/temp_dir.h"

namespace spool::checkpoint {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::CommittedSteps;
using testing::DeterministicBytes;
using testing::StoreKind;
using testing::StoreKindName;
using testing::TestRoot;
using test_support::TempDir;

// Forwards to another store, but holds the opening of a writer for keys
// containing `gated` until Release() or until the caller's work is
// cancelled, as a request to a slow server would be: an upload that stays in
// flight for as long as the test needs, and that a cancel ends the way the
// HTTP transport ends one.
class GateStore : public test_support::ForwardingStore {
 public:
  GateStore(std::shared_ptr<ObjectStore> inner, std::string gated)
      : ForwardingStore(std::move(inner)), gated_(std::move(gated)) {}

  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Waits until a gated write is held (the save is mid-upload).
  bool WaitUntilHolding(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return holding_ > 0; });
  }
  int cancelled_writes() const { return cancelled_writes_; }

  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key, const WriteOptions& options = {}) override {
    SPOOL_RETURN_IF_ERROR(Gate(key));
    return inner().OpenWrite(key, options);
  }
  Result<std::unique_ptr<WritableObject>> OpenResumableUpload(std::string_view key, const WriteOptions& options,
                                                              const ResumeOptions& resume) override {
    SPOOL_RETURN_IF_ERROR(Gate(key));
    return inner().OpenResumableUpload(key, options, resume);
  }

 private:
  Status Gate(std::string_view key) {
    if (key.find(gated_) == std::string_view::npos) return OkStatus();
    const CancelToken token = CancelToken::Current();
    std::unique_lock lock(mu_);
    ++holding_;
    cv_.notify_all();
    const auto give_up = Clock::now() + 30s;  // a broken test fails instead of hanging
    while (!released_ && !token.cancelled() && Clock::now() < give_up) cv_.wait_for(lock, 5ms);
    --holding_;
    if (released_) return OkStatus();
    ++cancelled_writes_;
    Status cancelled = token.Check("writing " + Describe(key));
    return cancelled.ok() ? DeadlineExceededError("the gate on " + Describe(key) + " was never released") : cancelled;
  }

  const std::string gated_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  int holding_ = 0;
  std::atomic<int> cancelled_writes_{0};
};

// A checkpoint of a few files, one large enough to take several appends.
CheckpointSource Files(int64_t step) {
  CheckpointSource source;
  source.AddBuffer("model.bin", DeterministicBytes(static_cast<uint64_t>(step), 3 << 20));
  source.AddBuffer("optimizer/state.bin", DeterministicBytes(static_cast<uint64_t>(step) + 100, 4096));
  source.AddBuffer("empty", "");
  return source;
}

std::string StepFolder(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%012lld/", static_cast<long long>(step));
  return name;
}

class SaveBeforeDeadlineTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    root_.emplace(GetParam(), scratch_.path(), "preemption-test");
    inner_ = root_->store;
    root_key_ = root_->root_key;
  }
  void TearDown() override { root_.reset(); }

  std::unique_ptr<CheckpointManager> Manager(std::shared_ptr<ObjectStore> store = nullptr) {
    return std::make_unique<CheckpointManager>(store ? store : inner_, root_key_);
  }
  // Keys of objects under the step's folder: an uncommitted step leaves none.
  std::vector<std::string> ObjectsOf(int64_t step) {
    ListOptions options;
    options.prefix = root_key_ + "/" + StepFolder(step);
    Result<ListPage> page = ListAll(*inner_, options);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> keys;
    if (page.ok()) {
      for (const auto& object : page->objects) keys.push_back(object.key);
    }
    return keys;
  }

  TempDir scratch_{"spool-ckpt-test"};
  std::optional<TestRoot> root_;
  std::shared_ptr<ObjectStore> inner_;
  std::string root_key_;
};

TEST_P(SaveBeforeDeadlineTest, CommitsBeforeAFutureDeadline) {
  auto manager = Manager();
  Result<CheckpointManifest> saved =
      manager->SaveBeforeDeadline(42, Files(42), {{"loader", "epoch=1"}}, Clock::now() + 60s);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->step, 42);
  EXPECT_EQ(saved->files.size(), 3u);
  EXPECT_EQ(saved->metadata.at("loader"), "epoch=1");
  EXPECT_EQ(CommittedSteps(*manager), std::vector<int64_t>{42});
  EXPECT_TRUE(manager->Verify(42).ok());
}

TEST_P(SaveBeforeDeadlineTest, APassedDeadlineCommitsNothingAndNamesTheLatestStep) {
  auto manager = Manager();
  ASSERT_TRUE(manager->Save(1, Files(1)).ok());
  Result<CheckpointManifest> saved = manager->SaveBeforeDeadline(2, Files(2), {}, Clock::now() - 1s);
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), StatusCode::kDeadlineExceeded) << saved.status().ToString();
  EXPECT_NE(saved.status().message().find("checkpoint step 2"), std::string::npos) << saved.status().ToString();
  EXPECT_NE(saved.status().message().find("latest committed checkpoint is step 1"), std::string::npos)
      << saved.status().ToString();
  EXPECT_EQ(CommittedSteps(*manager), std::vector<int64_t>{1});
  EXPECT_TRUE(ObjectsOf(2).empty()) << "no half-written step";
  Result<std::optional<int64_t>> latest = manager->Latest();
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(*latest, 1);
}

TEST_P(SaveBeforeDeadlineTest, ReportsNoLatestStepWhenThereIsNone) {
  auto manager = Manager();
  Result<CheckpointManifest> saved = manager->SaveBeforeDeadline(5, Files(5), {}, Clock::now() - 1s);
  ASSERT_EQ(saved.status().code(), StatusCode::kDeadlineExceeded) << saved.status().ToString();
  EXPECT_NE(saved.status().message().find("latest committed checkpoint is none"), std::string::npos)
      << saved.status().ToString();
  EXPECT_TRUE(CommittedSteps(*manager).empty());
  EXPECT_TRUE(ObjectsOf(5).empty());
}

TEST_P(SaveBeforeDeadlineTest, CancelsABackgroundSaveOfAnOlderStep) {
  auto gate = std::make_shared<GateStore>(inner_, StepFolder(10));
  auto manager = Manager(gate);
  Result<AsyncSaveStart> started = manager->SaveAsync(10, Files(10));
  ASSERT_TRUE(started.ok() && started->started) << started.status().ToString();
  ASSERT_TRUE(gate->WaitUntilHolding(30s)) << "the background save never started uploading";

  Result<CheckpointManifest> saved = manager->SaveBeforeDeadline(11, Files(11), {}, Clock::now() + 60s);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_GE(gate->cancelled_writes(), 1) << "the older save was waited for, not cancelled";
  EXPECT_FALSE(manager->save_in_flight());
  EXPECT_EQ(CommittedSteps(*manager), std::vector<int64_t>{11});
  EXPECT_TRUE(ObjectsOf(10).empty()) << "the cancelled step left files behind";
}

TEST_P(SaveBeforeDeadlineTest, GivesABackgroundSaveOfTheSameStepUntilTheDeadline) {
  auto gate = std::make_shared<GateStore>(inner_, StepFolder(20));
  auto manager = Manager(gate);
  ASSERT_TRUE(manager->SaveAsync(20, Files(20))->started);
  ASSERT_TRUE(gate->WaitUntilHolding(30s));
  // The upload goes on a moment after the preemption save starts waiting.
  std::thread release([&] {
    std::this_thread::sleep_for(200ms);
    gate->Release();
  });
  Result<CheckpointManifest> saved = manager->SaveBeforeDeadline(20, Files(20), {}, Clock::now() + 60s);
  release.join();
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->step, 20);
  EXPECT_EQ(gate->cancelled_writes(), 0);
  EXPECT_EQ(CommittedSteps(*manager), std::vector<int64_t>{20});
}

TEST_P(SaveBeforeDeadlineTest, ABackgroundSaveOfTheSameStepThatMissesTheDeadlineStaysUncommitted) {
  auto gate = std::make_shared<GateStore>(inner_, StepFolder(30));
  auto manager = Manager(gate);
  ASSERT_TRUE(manager->Save(29, Files(29)).ok());
  ASSERT_TRUE(manager->SaveAsync(30, Files(30))->started);
  ASSERT_TRUE(gate->WaitUntilHolding(30s));
  const auto deadline = Clock::now() + 300ms;
  Result<CheckpointManifest> saved = manager->SaveBeforeDeadline(30, Files(30), {}, deadline);
  EXPECT_GE(Clock::now(), deadline);
  ASSERT_EQ(saved.status().code(), StatusCode::kDeadlineExceeded) << saved.status().ToString();
  EXPECT_NE(saved.status().message().find("latest committed checkpoint is step 29"), std::string::npos)
      << saved.status().ToString();
  EXPECT_GE(gate->cancelled_writes(), 1) << "the deadline did not cancel the upload";
  EXPECT_EQ(CommittedSteps(*manager), std::vector<int64_t>{29});
  EXPECT_TRUE(ObjectsOf(30).empty());
}

INSTANTIATE_TEST_SUITE_P(Stores, SaveBeforeDeadlineTest, ::testing::Values(StoreKind::kMemory, StoreKind::kLocal),
                         [](const auto& info) { return StoreKindName(info.param); });

// The notice is process-wide: each test starts and ends without one.
class PreemptionNoticeTest : public ::testing::Test {
 protected:
  void SetUp() override { PreemptionNotice::Get().Clear(); }
  void TearDown() override {
    PreemptionNotice::Get().Clear();
    ::signal(SIGTERM, SIG_DFL);
  }
};

TEST_F(PreemptionNoticeTest, NotRequestedHasNoDeadline) {
  const PreemptionNotice& notice = PreemptionNotice::Get();
  EXPECT_FALSE(notice.requested());
  EXPECT_EQ(notice.signal(), 0);
  EXPECT_EQ(notice.deadline(), Clock::time_point::max());
}

TEST_F(PreemptionNoticeTest, RequestSetsTheDeadlineToGraceMinusMargin) {
  // No signals: only grace and margin are set.
  PreemptionNotice& notice = PreemptionNotice::Install(30s, 5s, {});
  EXPECT_EQ(notice.grace(), 30s);
  const auto before = Clock::now();
  notice.Request();
  const auto after = Clock::now();
  EXPECT_TRUE(notice.requested());
  EXPECT_EQ(notice.signal(), 0);
  EXPECT_GE(notice.deadline(), before + 25s);
  EXPECT_LE(notice.deadline(), after + 25s);
  notice.Clear();
  EXPECT_FALSE(notice.requested());
  EXPECT_EQ(notice.deadline(), Clock::time_point::max());
}

TEST_F(PreemptionNoticeTest, SigtermSetsItAndASecondOneKeepsTheFirstArrival) {
  PreemptionNotice& notice = PreemptionNotice::Install(20s, 2s);
  const auto before = Clock::now();
  ASSERT_EQ(::raise(SIGTERM), 0);  // handled: the process goes on
  const auto after = Clock::now();
  EXPECT_TRUE(notice.requested());
  EXPECT_EQ(notice.signal(), SIGTERM);
  const auto deadline = notice.deadline();
  EXPECT_GE(deadline, before + 18s);
  EXPECT_LE(deadline, after + 18s);

  std::this_thread::sleep_for(20ms);
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(notice.deadline(), deadline);
}

}  // namespace
}  // namespace spool::checkpoint
