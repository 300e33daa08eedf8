// ranks_bench: a checkpoint of `size` bytes saved by one rank, against the
// same bytes saved by N ranks at once (size/N each, one CheckpointManager per
// rank, rank 0 committing once every part is stored), on the same store in
// the same run, alternating. For each: the wall time until the step is
// committed, and how long the training loop is blocked (SaveAsync's return;
// for N ranks, the slowest rank's). Ranks are threads of this process: on one
// machine they share its cores and network as N pods on one node would.
//
//   ranks_bench [--url URL] [--size 2GiB] [--ranks 4] [--files 8] [--rounds 5] [--work DIR]
//
// The default URL is a local-store folder under the work folder. For S3 set
// the AWS_* environment (endpoint, keys) and pass --url s3://bucket/prefix.
// Everything written is deleted at the end.
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/checkpoint/bench_folder.h"
#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/bytes.h"
#include "spool/register_backends.h"

namespace {

namespace fs = std::filesystem;
using spool::bench::Clock;
using spool::bench::Median;
using spool::bench::Seconds;

struct Timing {
  double committed = 0;  // from the start until rank 0's save returned (committed)
  double blocked = 0;    // the longest any rank's SaveAsync call took
  spool::Status status;
};

std::string Spread(const std::vector<double>& values) {
  auto [low, high] = std::minmax_element(values.begin(), values.end());
  char text[96];
  std::snprintf(text, sizeof text, "%7.3f s (%.3f-%.3f)", Median(values), *low, *high);
  return text;
}

// Every rank's manager saves `step` from its own folder with SaveAsync, all
// starting together; rank 0's Wait() returns once the step is committed.
Timing SaveWithRanks(const std::string& url, int ranks, int64_t step, const std::vector<fs::path>& folders) {
  std::vector<std::unique_ptr<spool::checkpoint::CheckpointManager>> managers;
  for (int rank = 0; rank < ranks; ++rank) {
    spool::checkpoint::CheckpointOptions options;
    options.rank = rank;
    options.world_size = ranks;
    options.attempt = "bench";
    options.write_latest_hint = false;
    auto manager = spool::checkpoint::CheckpointManager::Open(url, options);
    if (!manager.ok()) return {0, 0, manager.status()};
    managers.push_back(std::move(*manager));
  }
  std::vector<double> blocked(static_cast<size_t>(ranks));
  std::vector<spool::Status> outcome(static_cast<size_t>(ranks));
  const Clock::time_point start = Clock::now();
  double committed = 0;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      const size_t r = static_cast<size_t>(rank);
      auto source = spool::checkpoint::CheckpointSource::FromFolder(folders[r]);
      if (!source.ok()) {
        outcome[r] = source.status();
        return;
      }
      const Clock::time_point called = Clock::now();
      auto started = managers[r]->SaveAsync(step, std::move(*source));
      blocked[r] = Seconds(Clock::now() - called);
      if (!started.ok()) {
        outcome[r] = started.status();
        return;
      }
      auto done = managers[r]->Wait();
      if (rank == 0) committed = Seconds(Clock::now() - start);
      outcome[r] = done.status();
    });
  }
  for (auto& thread : threads) thread.join();
  Timing timing{committed, *std::max_element(blocked.begin(), blocked.end()), spool::OkStatus()};
  for (const auto& status : outcome) {
    if (!status.ok() && timing.status.ok()) timing.status = status;
  }
  return timing;
}

int Fail(const spool::Status& status) {
  std::fprintf(stderr, "ranks_bench: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  uint64_t size = 2ull << 30;
  int ranks = 4, files = 8, rounds = 5;
  fs::path work = fs::temp_directory_path() / "spool-ranks-bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--url") {
      url = value;
    } else if (flag == "--size") {
      auto parsed = spool::ParseByteSize(value);
      if (!parsed.ok()) return Fail(parsed.status());
      size = *parsed;
    } else if (flag == "--ranks") {
      ranks = std::stoi(value);
    } else if (flag == "--files") {
      files = std::stoi(value);
    } else if (flag == "--rounds") {
      rounds = std::stoi(value);
    } else if (flag == "--work") {
      work = value;
    } else {
      std::fprintf(stderr, "usage: %s [--url URL] [--size 2GiB] [--ranks 4] [--files 8] [--rounds 5] [--work DIR]\n",
                   argv[0]);
      return 2;
    }
  }
  if (ranks < 2) {
    std::fprintf(stderr, "ranks_bench: --ranks must be at least 2\n");
    return 2;
  }
  spool::RegisterAllBackends();
  fs::remove_all(work);
  const fs::path whole = work / "one-rank";
  spool::bench::MakeFolder(whole, size, files);
  std::vector<fs::path> parts;
  for (int rank = 0; rank < ranks; ++rank) {
    parts.push_back(work / ("rank-" + std::to_string(rank)));
    spool::bench::MakeFolder(parts.back(), size / static_cast<uint64_t>(ranks), files);
  }
  if (url.empty()) url = "file://" + (work / "store").string();
  std::printf("checkpoint of %s: 1 rank vs %d ranks of %s each, %d files per rank, store %s\n",
              spool::FormatBytes(size).c_str(), ranks,
              spool::FormatBytes(size / static_cast<uint64_t>(ranks)).c_str(), files, url.c_str());

  auto cleaner = spool::checkpoint::CheckpointManager::Open(url);
  if (!cleaner.ok()) return Fail(cleaner.status());
  std::vector<double> one_commit, one_blocked, many_commit, many_blocked;
  int64_t step = 1;
  for (int round = 0; round <= rounds; ++round) {  // round 0 warms up
    if (auto pruned = (*cleaner)->Prune(0); !pruned.ok()) return Fail(pruned.status());
    Timing one = SaveWithRanks(url + "/one", 1, step, {whole});
    if (!one.status.ok()) return Fail(one.status);
    Timing many = SaveWithRanks(url + "/many", ranks, step, parts);
    if (!many.status.ok()) return Fail(many.status);
    ++step;
    std::printf("round %d%s: 1 rank committed after %.3f s (blocked %.4f s) | %d ranks committed after %.3f s "
                "(blocked %.4f s)\n",
                round, round == 0 ? " (warm-up)" : "", one.committed, one.blocked, ranks, many.committed, many.blocked);
    std::fflush(stdout);
    for (const char* sub : {"/one", "/many"}) {
      auto manager = spool::checkpoint::CheckpointManager::Open(url + sub);
      if (!manager.ok()) return Fail(manager.status());
      if (auto pruned = (*manager)->Prune(0); !pruned.ok()) return Fail(pruned.status());
    }
    if (round == 0) continue;
    one_commit.push_back(one.committed);
    one_blocked.push_back(one.blocked);
    many_commit.push_back(many.committed);
    many_blocked.push_back(many.blocked);
  }
  std::printf("\nmedian (min-max) of %d rounds:\n", rounds);
  std::printf("  1 rank:   committed after %s, loop blocked %s\n", Spread(one_commit).c_str(),
              Spread(one_blocked).c_str());
  std::printf("  %d ranks:  committed after %s, loop blocked %s\n", ranks, Spread(many_commit).c_str(),
              Spread(many_blocked).c_str());
  std::printf("  ratio %d ranks / 1 rank, time to commit: %.3f\n", ranks, Median(many_commit) / Median(one_commit));
  fs::remove_all(work);
  return 0;
}
