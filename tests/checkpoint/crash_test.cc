// The crash test on the local-file store: a saver process SIGKILLed at random
// moments, 30 times; after each kill the latest checkpoint is a committed one
// and restores byte-identical.
#include <gtest/gtest.h>

#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/checkpoint/crash_harness.h"
#include "tests/support/temp_dir.h"

namespace spool::checkpoint {
namespace {

TEST(CheckpointCrashTest, LatestIsAlwaysACommittedStepOnLocalFiles) {
  test_support::TempDir scratch("spool-ckpt-test");
  testing::CrashTestConfig config;
  config.root_url = "file://" + (scratch.path() / "store" / "ckpt").string();
  config.saver = SPOOL_CRASH_SAVER;
  config.work_folder = scratch.path() / "work";
  std::filesystem::create_directories(config.work_folder);
  config.runs = 30;
  config.max_kill_delay_ms = 300;
  testing::RunCrashTest(config);
}

}  // namespace
}  // namespace spool::checkpoint
