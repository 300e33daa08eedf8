// loader_bench: DataLoader throughput for 100 KB records, reading the same
// dataset from an S3 store (Ceph RGW) and from local disk in one run.
//
//   loader_bench [--s3 s3://bucket/prefix] --local /tmp/dir [--records 4096]
//                [--record-bytes 102400] [--shards 16] [--budget 256MiB]
//                [--interleave 4] [--read-ahead 16MiB] [--passes 3] [--keep]
//
// Beside the loader, on the same local shards and in the same run, all
// wall-clock (best of `passes`): plain read() of each shard file into one
// reused 256 KiB buffer (the ceiling), and one RecordReader thread reading
// every record as a view (the record path without the loader). Without --s3
// only the local source is measured.
//
// The S3 endpoint and keys come from the AWS_* environment (see
// bench/loader/run.sh). Each source is read `passes` times and the best
// pass is reported, so a warm-up effect does not decide the ratio. Peak RSS
// is measured per source: VmHWM is reset (/proc/self/clear_refs) before
// each source's passes. Local reads come from the page cache after the
// first pass (the dataset was just written), which is what a local-disk
// baseline on a machine with enough memory looks like.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include "spool/core/buffer_pool.h"
#include "spool/core/bytes.h"
#include "spool/core/storage/registry.h"
#include "spool/core/storage/transfer.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/record_reader.h"
#include "spool/records/sharded_writer.h"
#include "spool/register_backends.h"

namespace {

struct Args {
  std::string s3;
  std::string local;
  uint64_t records = 4096;
  uint64_t record_bytes = 100 * 1024;
  int shards = 16;
  uint64_t budget = 256ull << 20;
  int passes = 3;
  int interleave = 4;
  uint64_t read_ahead = 16ull << 20;
  bool keep = false;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "loader_bench: %s\nusage: loader_bench [--s3 s3://bucket/prefix] --local /dir [--records N] "
               "[--record-bytes N] [--shards N] [--budget SIZE] [--interleave N] [--read-ahead SIZE] [--passes N] "
               "[--keep]\n",
               why);
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value for " + flag).c_str());
      return argv[++i];
    };
    if (flag == "--s3") args.s3 = value();
    else if (flag == "--local") args.local = value();
    else if (flag == "--records") args.records = std::stoull(value());
    else if (flag == "--record-bytes") args.record_bytes = std::stoull(value());
    else if (flag == "--shards") args.shards = std::stoi(value());
    else if (flag == "--budget") {
      auto bytes = spool::ParseByteSize(value());
      if (!bytes.ok()) Usage(bytes.status().ToString().c_str());
      args.budget = *bytes;
    } else if (flag == "--read-ahead") {
      auto bytes = spool::ParseByteSize(value());
      if (!bytes.ok()) Usage(bytes.status().ToString().c_str());
      args.read_ahead = *bytes;
    } else if (flag == "--passes") args.passes = std::stoi(value());
    else if (flag == "--interleave") args.interleave = std::stoi(value());
    else if (flag == "--keep") args.keep = true;
    else Usage(("unknown flag " + flag).c_str());
  }
  if (args.local.empty()) Usage("--local is required");
  return args;
}

void Check(const spool::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "loader_bench: %s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  }
}

uint64_t ReadStatusKiB(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::strtoull(line.c_str() + std::string(field).size(), nullptr, 10);
  }
  return 0;
}

void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Where the process's resident memory sits when no loader is open: what the
// peak RSS carries besides the loader's own buffers (its byte budget).
void PrintMemory(const char* when) {
  const struct mallinfo2 heap = mallinfo2();
  std::printf("memory %s: RSS %s; idle in the buffer pool %s; malloc in use %s, free but kept %s\n", when,
              spool::FormatBytes(ReadStatusKiB("VmRSS:") * 1024).c_str(),
              spool::FormatBytes(spool::DefaultBufferPool().idle_bytes()).c_str(),
              spool::FormatBytes(heap.uordblks + heap.hblkhd).c_str(), spool::FormatBytes(heap.fordblks).c_str());
}

// Writes the same records under `url` (a prefix) with the sharded writer.
std::string WriteDataset(const Args& args, const std::string& url) {
  auto location = spool::OpenLocation(url);
  Check(location.status(), url.c_str());
  spool::records::ShardedWriterOptions options;
  options.num_shards = args.shards;
  auto writer = spool::records::ShardedWriter::Open(*location->store, location->key, options);
  Check(writer.status(), "open writer");
  std::string record(args.record_bytes, '\0');
  uint64_t x = 1;
  for (uint64_t i = 0; i < args.records; ++i) {
    for (size_t j = 0; j < record.size(); j += 8) {  // incompressible, distinct
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      std::memcpy(&record[j], &x, std::min<size_t>(8, record.size() - j));
    }
    Check((*writer)->Write(record), "write");
  }
  Check((*writer)->Close().status(), "close writer");
  return url + ".manifest.json";
}

struct PassResult {
  double seconds = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t peak_buffered = 0;
  double wait_seconds = 0;
};

PassResult ReadOnce(const Args& args, const std::string& manifest) {
  spool::loader::DataLoaderOptions options;
  options.inputs = {manifest};
  options.seed = 1;
  options.shuffle_buffer = 256;
  options.batch_size = 32;
  options.interleave = args.interleave;
  options.memory_budget = args.budget;
  options.read_ahead = args.read_ahead;
  options.fetch_chunk = 2ull << 20;
  const auto start = std::chrono::steady_clock::now();
  auto loader = spool::loader::DataLoader::Open(options);
  Check(loader.status(), "open loader");
  PassResult result;
  while (true) {
    auto batch = (*loader)->Next();
    Check(batch.status(), "next");
    if (!*batch) break;
    for (const std::string& record : (*batch)->records) result.bytes += record.size();
    result.records += (*batch)->records.size();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto counters = (*loader)->Counters();
  result.peak_buffered = counters.peak_buffered_bytes;
  result.wait_seconds = counters.wait_seconds;
  return result;
}

// The store's own ceiling: every shard read whole with parallel ranged
// reads (core ReadParallel), no record parsing, no loader.
double RawMBps(const std::string& manifest) {
  auto location = spool::OpenLocation(manifest);
  Check(location.status(), manifest.c_str());
  std::string folder = location->key.substr(0, location->key.rfind('/') + 1);
  spool::ListOptions list;
  list.prefix = folder;
  auto page = spool::ListAll(*location->store, list);
  Check(page.status(), "list");
  std::vector<char> buffer;
  uint64_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& object : page->objects) {
    if (!object.key.ends_with(".tfrecord")) continue;
    auto readable = location->store->OpenRead(object.key);
    Check(readable.status(), object.key.c_str());
    buffer.resize(object.size);
    auto read = spool::ReadParallel(**readable, 0, std::span<char>(buffer.data(), buffer.size()));
    Check(read.status(), "read");
    bytes += *read;
  }
  return bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 1e6;
}

// The shard objects (keys) of a dataset, beside its manifest.
std::vector<std::string> ShardKeys(spool::ObjectStore& store, const std::string& manifest_key) {
  spool::ListOptions list;
  list.prefix = manifest_key.substr(0, manifest_key.rfind('/') + 1);
  auto page = spool::ListAll(store, list);
  Check(page.status(), "list");
  std::vector<std::string> keys;
  for (const auto& object : page->objects) {
    if (object.key.ends_with(".tfrecord")) keys.push_back(object.key);
  }
  return keys;
}

// Best-of-`passes` MB/s of `pass`, which returns the payload bytes it saw.
template <typename Pass>
double BestMBps(int passes, Pass pass) {
  double best = 0;
  for (int i = 0; i < passes; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const uint64_t bytes = pass();
    best = std::max(best, bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 1e6);
  }
  return best;
}

// The local ceiling: each shard file read() front to back into one reused
// 256 KiB buffer (what a program that only moves the bytes gets).
double PlainReadMBps(const Args& args, const std::string& manifest) {
  auto location = spool::OpenLocation(manifest);
  Check(location.status(), manifest.c_str());
  const std::vector<std::string> keys = ShardKeys(*location->store, location->key);
  std::vector<char> buffer(256 << 10);
  return BestMBps(args.passes, [&] {
    uint64_t bytes = 0;
    for (const std::string& key : keys) {
      const int fd = ::open(("/" + key).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) Check(spool::InternalError("cannot open /" + key), "plain read");
      ssize_t n;
      while ((n = ::read(fd, buffer.data(), buffer.size())) > 0) bytes += static_cast<uint64_t>(n);
      ::close(fd);
    }
    return bytes;
  });
}

// One RecordReader thread, default options, every record of every shard as
// a view; MB/s of record payload.
double RecordReaderMBps(const Args& args, const std::string& manifest) {
  auto location = spool::OpenLocation(manifest);
  Check(location.status(), manifest.c_str());
  const std::vector<std::string> keys = ShardKeys(*location->store, location->key);
  return BestMBps(args.passes, [&] {
    uint64_t bytes = 0;
    for (const std::string& key : keys) {
      auto reader = spool::records::RecordReader::Open(*location->store, key);
      Check(reader.status(), key.c_str());
      std::string_view record;
      while (true) {
        auto more = (*reader)->Next(&record);
        Check(more.status(), "record");
        if (!*more) break;
        bytes += record.size();
      }
    }
    return bytes;
  });
}

struct SourceResult {
  PassResult best;
  uint64_t peak_rss_kib = 0;
};

SourceResult Measure(const Args& args, const std::string& name, const std::string& manifest) {
  PrintMemory(("before the " + name + " passes").c_str());
  ResetPeakRss();
  SourceResult out;
  for (int pass = 0; pass < args.passes; ++pass) {
    PassResult r = ReadOnce(args, manifest);
    if (r.records != args.records) {
      std::fprintf(stderr, "loader_bench: %s delivered %llu records, expected %llu\n", name.c_str(),
                   static_cast<unsigned long long>(r.records), static_cast<unsigned long long>(args.records));
      std::exit(1);
    }
    std::printf("  %-6s pass %d: %8.0f records/s %8.1f MB/s  (Next() waited %.2f s, peak buffered %s)\n",
                name.c_str(), pass + 1, r.records / r.seconds, r.bytes / r.seconds / 1e6, r.wait_seconds,
                spool::FormatBytes(r.peak_buffered).c_str());
    if (out.best.seconds == 0 || r.seconds < out.best.seconds) out.best = r;
  }
  out.peak_rss_kib = ReadStatusKiB("VmHWM:");
  PrintMemory(("after the " + name + " passes").c_str());
  return out;
}

void Cleanup(const std::string& prefix_url, const std::string& manifest) {
  auto location = spool::OpenLocation(manifest);
  if (!location.ok()) return;
  spool::ListOptions list;
  auto prefix = spool::OpenLocation(prefix_url);
  if (!prefix.ok()) return;
  list.prefix = prefix->key;
  auto page = spool::ListAll(*location->store, list);
  if (!page.ok()) return;
  std::vector<std::string> keys;
  for (const auto& object : page->objects) keys.push_back(object.key);
  location->store->DeleteMany(keys).status().IgnoreError();
}

}  // namespace

int main(int argc, char** argv) {
  Args args = Parse(argc, argv);
  spool::RegisterAllBackends();
  const std::string s3_prefix = args.s3 + "/loader-bench";
  const std::string local_prefix = args.local + "/loader-bench";
  std::printf("dataset: %llu records of %s in %d shards (%s); memory budget %s, interleave %d, read-ahead %s\n",
              static_cast<unsigned long long>(args.records), spool::FormatBytes(args.record_bytes).c_str(),
              args.shards, spool::FormatBytes(args.records * args.record_bytes).c_str(),
              spool::FormatBytes(args.budget).c_str(), args.interleave, spool::FormatBytes(args.read_ahead).c_str());
  const bool with_s3 = !args.s3.empty();
  const std::string s3_manifest = with_s3 ? WriteDataset(args, s3_prefix) : "";
  const std::string local_manifest = WriteDataset(args, local_prefix);
  const uint64_t rss_before_kib = ReadStatusKiB("VmRSS:");
  SourceResult local = Measure(args, "local", local_manifest);
  SourceResult s3 = with_s3 ? Measure(args, "s3", s3_manifest) : SourceResult{};
  auto line = [&](const char* name, const SourceResult& r) {
    std::printf("%-6s %9.0f records/s %8.1f MB/s  peak RSS %s (budget %s + %s)\n", name,
                r.best.records / r.best.seconds, r.best.bytes / r.best.seconds / 1e6,
                spool::FormatBytes(r.peak_rss_kib * 1024).c_str(), spool::FormatBytes(args.budget).c_str(),
                spool::FormatBytes(r.peak_rss_kib * 1024 > args.budget ? r.peak_rss_kib * 1024 - args.budget : 0)
                    .c_str());
  };
  std::printf("\nRSS before reading: %s\n", spool::FormatBytes(rss_before_kib * 1024).c_str());
  line("local", local);
  const double plain = PlainReadMBps(args, local_manifest);
  const double reader = RecordReaderMBps(args, local_manifest);
  const double loader_local = local.best.bytes / local.best.seconds / 1e6;
  std::printf("local plain read() into a reused 256 KiB buffer: %.1f MB/s\n", plain);
  std::printf("local one RecordReader thread: %.1f MB/s (%.2fx plain read)\n", reader, reader / plain);
  std::printf("local loader: %.1f MB/s (%.2fx plain read)\n", loader_local, loader_local / plain);
  if (with_s3) {
    line("s3", s3);
    std::printf("raw whole-object reads (ReadParallel, no loader): local %.1f MB/s, s3 %.1f MB/s\n",
                RawMBps(local_manifest), RawMBps(s3_manifest));
    std::printf("ratio s3/local: %.2fx\n",
                (s3.best.records / s3.best.seconds) / (local.best.records / local.best.seconds));
  }
  if (!args.keep) {
    if (with_s3) Cleanup(s3_prefix, s3_manifest);
    Cleanup(local_prefix, local_manifest);
  }
  return 0;
}
