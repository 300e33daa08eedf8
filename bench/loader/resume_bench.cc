// resume_bench: what a mid-epoch Resume costs, fixed shape and elastic,
// with and without index files, uncompressed and GZIP.
//
//   resume_bench --dir /tmp/resume-bench [--records 20000] [--record-bytes 4096]
//                [--shards 16] [--partitions 16] [--rounds 5]
//
// Writes one local dataset per variant (page-cached after writing), then for
// each: opens a loader, resumes it at the middle of epoch 0 and takes one
// batch. Reports the median and range over `rounds` of the time from Resume
// to the first batch, and the bytes the loader read from the store to get
// there (LoaderCounters::object_bytes, prefetch paused so that read-ahead is
// not counted): without index files a shard is
// repositioned by reading and dropping the records before the resume point,
// which is what this measures.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "spool/core/storage/registry.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/sharded_writer.h"
#include "spool/register_backends.h"

namespace {

struct Args {
  std::string dir;
  uint64_t records = 20000;
  uint64_t record_bytes = 4096;
  int shards = 16;
  uint64_t partitions = 16;
  int rounds = 5;
};

[[noreturn]] void Fail(const std::string& why) {
  std::fprintf(stderr,
               "resume_bench: %s\nusage: resume_bench --dir DIR [--records N] [--record-bytes N] "
               "[--shards N] [--partitions N] [--rounds N]\n",
               why.c_str());
  std::exit(2);
}

void Check(const spool::Status& status, const std::string& what) {
  if (!status.ok()) Fail(what + ": " + status.ToString());
}

Args Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Fail("missing value for " + flag);
    const std::string value = argv[++i];
    if (flag == "--dir")
      args.dir = value;
    else if (flag == "--records")
      args.records = std::stoull(value);
    else if (flag == "--record-bytes")
      args.record_bytes = std::stoull(value);
    else if (flag == "--shards")
      args.shards = std::stoi(value);
    else if (flag == "--partitions")
      args.partitions = std::stoull(value);
    else if (flag == "--rounds")
      args.rounds = std::stoi(value);
    else
      Fail("unknown flag " + flag);
  }
  if (args.dir.empty()) Fail("--dir is required");
  return args;
}

// The manifest of a dataset written under `prefix` (a local path).
std::string WriteDataset(const Args& args, const std::string& prefix, bool index, bool gzip) {
  auto location = spool::OpenLocation(prefix);
  Check(location.status(), prefix);
  spool::records::ShardedWriterOptions options;
  options.num_shards = args.shards;
  options.write_index = index;
  if (gzip) options.compression = spool::records::Compression::kGzip;
  auto writer = spool::records::ShardedWriter::Open(*location->store, location->key, options);
  Check(writer.status(), "open writer");
  std::string record(args.record_bytes, '\0');
  uint64_t x = 1;
  for (uint64_t i = 0; i < args.records; ++i) {
    for (size_t j = 0; j < record.size(); j += 8) {  // distinct, half compressible
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      std::memcpy(&record[j], &x, std::min<size_t>(4, record.size() - j));
    }
    Check((*writer)->Write(record), "write");
  }
  Check((*writer)->Close().status(), "close writer");
  return prefix + ".manifest.json";
}

struct Sample {
  double seconds = 0;
  uint64_t object_bytes = 0;
};

Sample ResumeOnce(const std::string& manifest, uint64_t partitions, uint64_t records) {
  spool::loader::DataLoaderOptions options;
  options.inputs = {manifest};
  options.seed = 3;
  options.shuffle_buffer = 256;
  options.rank = 0;
  options.world_size = 1;
  options.partitions = partitions;
  if (partitions > 0) {
    options.global_batch_size = 4 * partitions;
  } else {
    options.batch_size = 64;
  }
  auto loader = spool::loader::DataLoader::Open(options);
  Check(loader.status(), "open loader");
  // Paused, the loader reads only what the first batch needs: the bytes
  // counted are the repositioning, not read-ahead. Let the fetches the
  // first pipeline started settle before counting.
  (*loader)->PausePrefetch(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  spool::loader::LoaderState state = (*loader)->State();
  const uint64_t batch = partitions > 0 ? 4 : 64;
  state.position = (partitions > 0 ? records / partitions / 2 : records / 2) / batch * batch;
  const uint64_t bytes_before = (*loader)->Counters().object_bytes;
  const auto start = std::chrono::steady_clock::now();
  Check((*loader)->Resume(state), "resume");
  auto first = (*loader)->Next();
  Check(first.status(), "first batch");
  Sample sample;
  sample.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sample.object_bytes = (*loader)->Counters().object_bytes - bytes_before;
  return sample;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  spool::RegisterAllBackends();
  std::filesystem::create_directories(args.dir);
  const double dataset_mb = static_cast<double>(args.records * args.record_bytes) / 1e6;
  std::printf("resume at mid-epoch: %llu records x %llu bytes (%.0f MB) in %d local page-cached shards, %d rounds\n",
              static_cast<unsigned long long>(args.records), static_cast<unsigned long long>(args.record_bytes),
              dataset_mb, args.shards, args.rounds);
  std::printf("| shards | mode | resume to first batch, median (min-max) | read from store to get there |\n");
  std::printf("|---|---|---|---|\n");
  struct Variant {
    const char* name;
    bool index, gzip;
  };
  for (Variant variant : {Variant{"uncompressed + index", true, false}, Variant{"uncompressed, no index", false, false},
                          Variant{"GZIP, no index", false, true}}) {
    const std::string prefix = (std::filesystem::absolute(args.dir) /
                                (std::string(variant.index ? "i" : "n") + (variant.gzip ? "-gz" : "") + "/train"))
                                   .string();
    const std::string manifest = WriteDataset(args, prefix, variant.index, variant.gzip);
    for (uint64_t partitions : {uint64_t{0}, args.partitions}) {
      std::vector<Sample> samples;
      for (int round = 0; round < args.rounds; ++round)
        samples.push_back(ResumeOnce(manifest, partitions, args.records));
      std::sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.seconds < b.seconds; });
      const Sample& median = samples[samples.size() / 2];
      const std::string mode =
          partitions == 0 ? "fixed shape, 1 worker" : "elastic, " + std::to_string(partitions) + " partitions";
      std::printf("| %s | %s | %.1f ms (%.1f-%.1f) | %.1f MB (%.0f%% of the dataset) |\n", variant.name, mode.c_str(),
                  median.seconds * 1e3, samples.front().seconds * 1e3, samples.back().seconds * 1e3,
                  static_cast<double>(median.object_bytes) / 1e6,
                  100.0 * static_cast<double>(median.object_bytes) / 1e6 / dataset_mb);
    }
  }
  return 0;
}
