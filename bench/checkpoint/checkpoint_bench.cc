// checkpoint_bench: the time a training loop is blocked by a checkpoint save,
// SaveAsync (capture only) vs a synchronous Save (capture, upload, commit),
// on the same checkpoint folder and store in the same run, alternating; and
// save/restore time. With --aws (s3:// URLs), each round also uploads and
// downloads the same folder with `aws s3 cp --recursive`, for the ratio.
//
//   checkpoint_bench [--url URL] [--size 1GiB] [--files 20] [--rounds 5] [--work DIR] [--aws 1]
//                    [--file-concurrency N]
//
// The default URL is a local-store folder under the work folder. For S3 set
// the AWS_* environment (endpoint, keys) and pass --url s3://bucket/prefix.
// Restores go to the work folder: put it on tmpfs (/dev/shm) to measure the
// transfer rather than the disk. Everything written is deleted at the end.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/checkpoint/bench_folder.h"
#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/bytes.h"
#include "spool/register_backends.h"

namespace {

namespace fs = std::filesystem;
using spool::bench::Clock;
using spool::bench::MakeFolder;
using spool::bench::Median;
using spool::bench::Seconds;

// Runs a shell command; returns its wall time in seconds, or -1 on failure.
double TimeCommand(const std::string& command) {
  Clock::time_point start = Clock::now();
  int rc = std::system(command.c_str());
  if (rc != 0) {
    std::fprintf(stderr, "checkpoint_bench: failed (%d): %s\n", rc, command.c_str());
    return -1;
  }
  return Seconds(Clock::now() - start);
}

int Fail(const spool::Status& status) {
  std::fprintf(stderr, "checkpoint_bench: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  uint64_t size = 1ull << 30;
  int files = 20;
  int rounds = 5;
  bool aws = false;
  int file_concurrency = spool::checkpoint::CheckpointOptions().file_concurrency;
  fs::path work = fs::temp_directory_path() / "spool-checkpoint-bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--url") {
      url = value;
    } else if (flag == "--size") {
      auto parsed = spool::ParseByteSize(value);
      if (!parsed.ok()) return Fail(parsed.status());
      size = *parsed;
    } else if (flag == "--files") {
      files = std::stoi(value);
    } else if (flag == "--rounds") {
      rounds = std::stoi(value);
    } else if (flag == "--file-concurrency") {
      file_concurrency = std::stoi(value);
    } else if (flag == "--aws") {
      aws = value == "1";
    } else if (flag == "--work") {
      work = value;
    } else {
      std::fprintf(stderr, "usage: %s [--url URL] [--size 1GiB] [--files 20] [--rounds 5] [--work DIR] [--aws 1]"
                 " [--file-concurrency N]\n",
                   argv[0]);
      return 2;
    }
  }
  spool::RegisterAllBackends();
  fs::remove_all(work);
  const fs::path source = work / "source";
  MakeFolder(source, size, files);
  if (url.empty()) url = "file://" + (work / "store").string();

  spool::checkpoint::CheckpointOptions options;
  options.retention.keep_last = 2;  // bounds what the run leaves on the store
  options.file_concurrency = file_concurrency;
  auto manager = spool::checkpoint::CheckpointManager::Open(url, options);
  if (!manager.ok()) return Fail(manager.status());
  // Start from an empty root.
  if (auto pruned = (*manager)->Prune(0); !pruned.ok()) return Fail(pruned.status());

  std::printf("checkpoint: %d files, %s, store %s, %d files in flight\n", files, spool::FormatBytes(size).c_str(),
              url.c_str(), file_concurrency);
  if (aws && url.rfind("s3://", 0) != 0) {
    std::fprintf(stderr, "checkpoint_bench: --aws needs an s3:// URL\n");
    return 2;
  }
  const std::string aws_url = url + "-aws-cli/";
  const fs::path aws_restored = work / "aws-restored";
  std::vector<double> sync_blocked, async_blocked, async_total, restore, aws_up, aws_down;
  int64_t step = 1;
  for (int round = 0; round <= rounds; ++round) {  // round 0 warms up
    auto source_now = spool::checkpoint::CheckpointSource::FromFolder(source);
    if (!source_now.ok()) return Fail(source_now.status());

    Clock::time_point start = Clock::now();
    auto saved = (*manager)->Save(step++, *source_now);
    if (!saved.ok()) return Fail(saved.status());
    double sync = Seconds(Clock::now() - start);

    start = Clock::now();
    auto started = (*manager)->SaveAsync(step++, std::move(*source_now));
    if (!started.ok()) return Fail(started.status());
    double blocked = Seconds(Clock::now() - start);
    auto waited = (*manager)->Wait();
    if (!waited.ok()) return Fail(waited.status());
    double total = Seconds(Clock::now() - start);

    start = Clock::now();
    auto restored = (*manager)->RestoreLatest(work / "restored");
    if (!restored.ok()) return Fail(restored.status());
    double restore_time = Seconds(Clock::now() - start);

    fs::remove_all(work / "restored");
    // Keep the store small between cases (Ceph's test OSD lives in memory).
    if (auto pruned = (*manager)->Prune(0); !pruned.ok()) return Fail(pruned.status());

    std::printf("round %d%s: Save %.3f s | SaveAsync blocked %.4f s, done after %.3f s | Restore %.3f s", round,
                round == 0 ? " (warm-up)" : "", sync, blocked, total, restore_time);
    if (aws) {
      double up = TimeCommand("aws s3 cp --recursive --only-show-errors '" + source.string() + "' '" + aws_url + "'");
      double down = TimeCommand("aws s3 cp --recursive --only-show-errors '" + aws_url + "' '" +
                                aws_restored.string() + "'");
      if (up < 0 || down < 0 || TimeCommand("aws s3 rm --recursive --only-show-errors '" + aws_url + "'") < 0) {
        return 1;
      }
      fs::remove_all(aws_restored);
      std::printf(" | aws up %.3f s, down %.3f s", up, down);
      if (round > 0) {
        aws_up.push_back(up);
        aws_down.push_back(down);
      }
    }
    std::printf("\n");
    std::fflush(stdout);
    if (round == 0) continue;
    sync_blocked.push_back(sync);
    async_blocked.push_back(blocked);
    async_total.push_back(total);
    restore.push_back(restore_time);
  }
  const double gib = static_cast<double>(size) / (1 << 30);
  std::printf("\nmedian of %d rounds:\n", rounds);
  std::printf("  synchronous Save blocks   %8.4f s (%.2f GiB/s)\n", Median(sync_blocked), gib / Median(sync_blocked));
  std::printf("  SaveAsync blocks          %8.4f s (upload finished after %.3f s)\n", Median(async_blocked),
              Median(async_total));
  std::printf("  ratio async/sync blocking %8.4f (goal <= 0.1)\n", Median(async_blocked) / Median(sync_blocked));
  std::printf("  Restore                   %8.4f s (%.2f GiB/s)\n", Median(restore), gib / Median(restore));
  if (aws) {
    std::printf("  aws s3 cp up              %8.4f s (%.2f GiB/s); spool Save is %.2fx its speed\n", Median(aws_up),
                gib / Median(aws_up), Median(aws_up) / Median(sync_blocked));
    std::printf("  aws s3 cp down            %8.4f s (%.2f GiB/s); spool Restore is %.2fx its speed (goal >= 1.2)\n",
                Median(aws_down), gib / Median(aws_down), Median(aws_down) / Median(restore));
  }

  if (auto pruned = (*manager)->Prune(0); !pruned.ok()) return Fail(pruned.status());
  fs::remove_all(work);
  return 0;
}
