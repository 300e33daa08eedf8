// save_checkpoint: the smallest useful CheckpointManager program. Saves a
// local folder as checkpoint STEP under ROOT (in the background, as a
// training loop would), waits for the commit, then lists what is there.
//
//   save_checkpoint s3://bucket/run-1/ckpt 1000 /scratch/model
//
// A checkpoint exists only once its MANIFEST.json is written, after every
// file is uploaded and verified; retention keeps the newest five.
#include <cstdio>
#include <cstdlib>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/register_backends.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: save_checkpoint ROOT STEP FOLDER\n");
    return 2;
  }
  spool::RegisterAllBackends();
  const int64_t step = std::strtoll(argv[2], nullptr, 10);

  spool::checkpoint::CheckpointOptions options;
  options.retention.keep_last = 5;
  auto manager = spool::checkpoint::CheckpointManager::Open(argv[1], options);
  auto source = spool::checkpoint::CheckpointSource::FromFolder(argv[3]);
  if (!manager.ok() || !source.ok()) {
    const spool::Status& error = manager.ok() ? source.status() : manager.status();
    std::fprintf(stderr, "save_checkpoint: %s\n", error.ToString().c_str());
    return 1;
  }

  // SaveAsync returns once the files are captured; training could go on here.
  auto started = (*manager)->SaveAsync(step, std::move(*source), {{"saved_by", "save_checkpoint"}});
  auto committed =
      started.ok() ? (*manager)->Wait() : spool::Result<spool::checkpoint::CheckpointManifest>(started.status());
  if (!committed.ok()) {
    std::fprintf(stderr, "save_checkpoint: %s\n", committed.status().ToString().c_str());
    return 1;
  }
  std::printf("committed step %lld: %zu files, %llu bytes\n", static_cast<long long>(committed->step),
              committed->files.size(), static_cast<unsigned long long>(committed->total_bytes()));

  auto all = (*manager)->List();
  if (!all.ok()) {
    std::fprintf(stderr, "save_checkpoint: %s\n", all.status().ToString().c_str());
    return 1;
  }
  for (const auto& manifest : *all) {
    std::printf("  step %lld  %zu files\n", static_cast<long long>(manifest.step), manifest.files.size());
  }
  return 0;
}
