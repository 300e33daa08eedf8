// stream_shards: the smallest useful DataLoader program. Streams a dataset
// (a manifest, a glob or shard URLs) in shuffled batches and prints how fast
// records arrive and how long the loop waited for them.
//
//   stream_shards s3://bucket/train.manifest.json
//   stream_shards '/data/train-*.tfrecord.gz' 256
//
// Rank and world size come from the launcher's environment (RANK/WORLD_SIZE,
// TF_CONFIG, OMPI_COMM_WORLD_*, JOB_COMPLETION_INDEX) when it sets them.
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "spool/records/loader/data_loader.h"
#include "spool/register_backends.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stream_shards DATASET [BATCH_SIZE]\n");
    return 2;
  }
  spool::RegisterAllBackends();

  spool::loader::DataLoaderOptions options;
  options.inputs = {argv[1]};
  options.batch_size = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 128;
  options.shuffle_buffer = 4096;
  options.epochs = 1;

  auto loader = spool::loader::DataLoader::Open(options);
  if (!loader.ok()) {
    std::fprintf(stderr, "stream_shards: %s\n", loader.status().ToString().c_str());
    return 1;
  }
  const auto& worker = (*loader)->worker();
  std::printf("worker %d of %d (from %s)\n", worker.rank, worker.world_size, worker.source.c_str());

  uint64_t batches = 0;
  while (true) {
    auto batch = (*loader)->Next();
    if (!batch.ok()) {
      std::fprintf(stderr, "stream_shards: %s\n", batch.status().ToString().c_str());
      return 1;
    }
    if (!*batch) break;  // the epoch is done
    ++batches;           // a training step would consume (*batch)->records here
  }
  const spool::loader::LoaderCounters c = (*loader)->Counters();
  std::printf("%llu batches, %llu records, %.1f MB in %.2f s: %.0f records/s, %.1f MB/s, waited %.2f s\n",
              static_cast<unsigned long long>(batches), static_cast<unsigned long long>(c.records), c.bytes / 1e6,
              c.seconds, c.records_per_second, c.bytes_per_second / 1e6, c.wait_seconds);
  return 0;
}
