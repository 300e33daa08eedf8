// The crash test, shared by the local-store (unit) and S3 (integration)
// variants: run the saver, SIGKILL it at a random moment, and check that the
// latest checkpoint is a committed one that restores byte-identical.
#pragma once

#include <filesystem>
#include <string>

#include "spool/core/storage/registry.h"

namespace spool::testing {

struct CrashTestConfig {
  std::string root_url;               // where the saver saves
  std::filesystem::path saver;        // the checkpoint_crash_saver executable
  std::filesystem::path work_folder;  // scratch space for the saver and restores
  int runs = 30;
  int max_kill_delay_ms = 400;  // each run is killed after uniform(0, this)
  StoreOptions store_options;
};

// Runs the whole test with gtest assertions.
void RunCrashTest(const CrashTestConfig& config);

}  // namespace spool::testing
