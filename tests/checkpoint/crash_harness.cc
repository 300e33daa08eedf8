#include "tests/checkpoint/crash_harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "spool/checkpoint/checkpoint_manager.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/support/files.h"

extern char** environ;

namespace spool::testing {

using checkpoint::CheckpointManager;
using checkpoint::CheckpointManifest;
using checkpoint::CleanupReport;

namespace {

// Starts the saver with its stdout on a pipe; returns its pid and the pipe.
std::pair<pid_t, int> StartSaver(const CrashTestConfig& config, int64_t first_step) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string saver = config.saver.string();
  std::string work = config.work_folder.string();
  std::string first = std::to_string(first_step);
  char* argv[] = {saver.data(), const_cast<char*>(config.root_url.c_str()), work.data(), first.data(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(::posix_spawn(&pid, saver.c_str(), &actions, nullptr, argv, environ), 0) << saver;
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  return {pid, fds[0]};
}

// Blocks until the saver printed its "saving" line (it opened the store and
// is about to save), so every kill lands inside the saving loop whatever the
// machine's speed. Keeps what was read in `output`.
void WaitUntilSaving(int fd, std::string* output) {
  char buffer[4096];
  while (output->find("saving\n") == std::string::npos) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got <= 0) return;  // the saver died: the checks below report it
    output->append(buffer, static_cast<size_t>(got));
  }
}

// Everything the saver printed: the highest step it reported committed.
std::optional<int64_t> LastReportedCommit(int fd, std::string output) {
  char buffer[4096];
  ssize_t got;
  while ((got = ::read(fd, buffer, sizeof buffer)) > 0) output.append(buffer, static_cast<size_t>(got));
  ::close(fd);
  std::optional<int64_t> last;
  size_t at = 0;
  while ((at = output.find("committed ", at)) != std::string::npos) {
    at += 10;
    size_t end = output.find('\n', at);
    if (end == std::string::npos) break;  // a line cut by the kill
    last = std::stoll(output.substr(at, end - at));
  }
  return last;
}

}  // namespace

void RunCrashTest(const CrashTestConfig& config) {
  // A new seed each run, printed so a failure can be replayed (SPOOL_CRASH_SEED).
  const char* seed_text = std::getenv("SPOOL_CRASH_SEED");
  const unsigned seed = seed_text != nullptr ? static_cast<unsigned>(std::stoul(seed_text)) : std::random_device()();
  std::printf("crash test seed %u (replay with SPOOL_CRASH_SEED=%u)\n", seed, seed);
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> delay_ms(0, config.max_kill_delay_ms);
  std::optional<int64_t> previous_latest;
  int runs_that_committed = 0;
  for (int run = 0; run < config.runs; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const int64_t first_step = previous_latest ? *previous_latest + 1 : 1;
    auto [pid, out] = StartSaver(config, first_step);
    ASSERT_GT(pid, 0);
    std::string output;
    WaitUntilSaving(out, &output);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int wait_status = 0;
    ASSERT_EQ(::waitpid(pid, &wait_status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(wait_status)) << "the saver stopped on its own: exit " << WEXITSTATUS(wait_status);
    std::optional<int64_t> reported = LastReportedCommit(out, std::move(output));
    if (reported) ++runs_that_committed;

    auto manager = CheckpointManager::Open(config.root_url, {}, config.store_options);
    ASSERT_TRUE(manager.ok()) << manager.status().ToString();
    Result<std::optional<int64_t>> latest = (*manager)->Latest();
    ASSERT_TRUE(latest.ok()) << latest.status().ToString();
    if (reported) {
      ASSERT_TRUE(*latest);
      EXPECT_GE(**latest, *reported) << "a step reported committed must stay visible";
    }
    if (previous_latest) {
      ASSERT_TRUE(*latest);
      EXPECT_GE(**latest, *previous_latest) << "the latest committed step never goes back";
    }
    if (!*latest) continue;

    std::filesystem::path target = config.work_folder / "restored";
    Result<CheckpointManifest> restored = (*manager)->Restore(**latest, target);
    ASSERT_TRUE(restored.ok()) << restored.status().ToString();
    EXPECT_EQ(restored->metadata.at("step"), std::to_string(**latest));
    ASSERT_TRUE(test_support::ReadTree(target) == CrashStepFiles(**latest)) << "step " << **latest << " is not byte-identical";
    // No manifest anywhere describes files that are missing or different.
    Result<std::vector<CheckpointManifest>> all = (*manager)->List();
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    for (const CheckpointManifest& manifest : *all) {
      Status verified = (*manager)->Verify(manifest.step);
      EXPECT_TRUE(verified.ok()) << verified.ToString();
    }
    previous_latest = *latest;
  }
  std::printf("%d kills, %d after at least one commit, latest committed step %lld\n", config.runs,
              runs_that_committed, static_cast<long long>(previous_latest.value_or(-1)));
  EXPECT_TRUE(previous_latest) << "no step was ever committed: the saver never got that far";
  // The partial steps the kills left are what Cleanup is for.
  auto manager = CheckpointManager::Open(config.root_url, {}, config.store_options);
  ASSERT_TRUE(manager.ok());
  Result<CleanupReport> cleaned = (*manager)->Cleanup(std::chrono::seconds(0));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
  Result<std::optional<int64_t>> latest = (*manager)->Latest();
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(*latest, previous_latest) << "Cleanup never touches committed steps";
}

}  // namespace spool::testing
