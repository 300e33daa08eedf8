// The process the crash test kills: saves steps first_step, first_step+1, ...
// forever under a root URL, each with the deterministic content of
// CrashStepFiles(step), and prints "committed <step>" after each commit.
// Even steps are saved synchronously from buffers, odd steps with SaveAsync
// from a folder (so kills land in background uploads too). Retention keeps
// the last 3, so kills also land in deletions. Prints "saving" once the store
// is open.
//
//   checkpoint_crash_saver ROOT_URL WORK_FOLDER FIRST_STEP
#include <cstdio>
#include <cstdlib>
#include <string>

#include "spool/checkpoint/checkpoint_manager.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#if SPOOL_CRASH_SAVER_ALL_BACKENDS
#include "spool/register_backends.h"
#endif

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ROOT_URL WORK_FOLDER FIRST_STEP\n", argv[0]);
    return 2;
  }
#if SPOOL_CRASH_SAVER_ALL_BACKENDS
  spool::RegisterAllBackends();
#endif
  spool::checkpoint::CheckpointOptions options;
  options.retention.keep_last = 3;
  auto manager = spool::checkpoint::CheckpointManager::Open(argv[1], options);
  if (!manager.ok()) {
    std::fprintf(stderr, "%s\n", manager.status().ToString().c_str());
    return 1;
  }
  std::printf("saving\n");
  std::fflush(stdout);
  const std::filesystem::path folder = std::filesystem::path(argv[2]) / "model";
  for (int64_t step = std::atoll(argv[3]);; ++step) {
    auto files = spool::testing::CrashStepFiles(step);
    spool::Result<spool::checkpoint::CheckpointManifest> saved = spool::InternalError("not saved");
    if (step % 2 == 0) {
      spool::checkpoint::CheckpointSource source;
      for (auto& [path, bytes] : files) source.AddBuffer(path, std::move(bytes));
      saved = (*manager)->Save(step, source, {{"step", std::to_string(step)}});
    } else {
      spool::testing::WriteFolder(folder, files);
      auto source = spool::checkpoint::CheckpointSource::FromFolder(folder);
      if (!source.ok()) return 1;
      auto started = (*manager)->SaveAsync(step, std::move(*source), {{"step", std::to_string(step)}});
      if (!started.ok()) {
        std::fprintf(stderr, "%s\n", started.status().ToString().c_str());
        return 1;
      }
      saved = (*manager)->Wait();
    }
    if (!saved.ok()) {
      std::fprintf(stderr, "%s\n", saved.status().ToString().c_str());
      return 1;
    }
    std::printf("committed %lld\n", static_cast<long long>(step));
    std::fflush(stdout);
  }
}
