// loader_bench: DataLoader throughput for 100 KB records, reading the same
// dataset from an S3 store (Ceph RGW) and from local disk in one run.
//
//   loader_bench [--s3 s3://bucket/prefix] --local /tmp/dir [--records 4096]
//                [--record-bytes 102400] [--shards 16] [--budget 256MiB]
//                [--interleave 4] [--read-ahead 16MiB] [--passes 3] [--keep]
//                [--epochs 1] [--scaling K1,K2,...] [--existing]
//
// Beside the loader, on the same local shards and in the same run, all
// wall-clock (best of `passes`): plain read() of each shard file into one
// reused 256 KiB buffer (the ceiling), and one RecordReader thread reading
// every record as a view (the record path without the loader). Without --s3
// only the local source is measured.
//
// Per GB read, each loader pass also reports the heap allocations it made
// (a counting operator new in this binary) and the page faults it took
// (getrusage minor faults): both should stay flat as records stream, i.e.
// not grow with the records read; and the CPU (user + system, all threads)
// it took per GB, with the cores that kept busy. --scaling runs K processes at once (each
// its own loader, then each its own plain read(), over the same page-cached
// local shards) for each K given ("nproc" is the machine's core count), and
// reports aggregate MB/s of both, with the processes' CPU per GB. With --epochs N > 1 each loader pass runs
// N epochs and the counts are also given for epochs 2..N alone: the steady
// state, without the loader's start.
//
// --existing reads the dataset an earlier --keep run left under the same
// --local (and --s3) prefixes, with the same --records, instead of writing
// it, and keeps it: a caller can then alternate loader_bench passes with its
// own rounds over the same shards (bench/python/torch_bench.py).
//
// The S3 endpoint and keys come from the AWS_* environment (see
// bench/loader/run.sh). Each source is read `passes` times and the best
// pass is reported, so a warm-up effect does not decide the ratio. Peak RSS
// is measured per source: VmHWM is reset (/proc/self/clear_refs) before
// each source's passes. Local reads come from the page cache after the
// first pass (the dataset was just written), which is what a local-disk
// baseline on a machine with enough memory looks like.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <new>

#include "spool/core/buffer_pool.h"
#include "spool/core/bytes.h"
#include "spool/core/storage/registry.h"
#include "spool/core/storage/transfer.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/record_reader.h"
#include "spool/records/sharded_writer.h"
#include "spool/register_backends.h"

// Every heap allocation of the process, counted (the bench's own included:
// it makes none per record).
std::atomic<uint64_t> g_allocations{0};

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const size_t a = static_cast<size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) { return operator new(size, align); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

uint64_t MinorFaults() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_minflt);
}

// User plus system CPU seconds of this process (RUSAGE_SELF) or of its
// waited-for children (RUSAGE_CHILDREN).
double CpuSeconds(int who) {
  struct rusage usage {};
  ::getrusage(who, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Args {
  std::string s3;
  std::string local;
  uint64_t records = 4096;
  uint64_t record_bytes = 100 * 1024;
  int shards = 16;
  uint64_t budget = 256ull << 20;
  int passes = 3;
  int epochs = 1;  // per pass; with more, epochs after the first are the steady state
  int interleave = 4;
  uint64_t read_ahead = 16ull << 20;
  bool keep = false;
  bool existing = false;     // read the dataset of an earlier --keep run
  std::vector<int> scaling;  // process counts for the scaling runs
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "loader_bench: %s\nusage: loader_bench [--s3 s3://bucket/prefix] --local /dir [--records N] "
               "[--record-bytes N] [--shards N] [--budget SIZE] [--interleave N] [--read-ahead SIZE] [--passes N] "
               "[--epochs N] [--keep] [--existing] [--scaling 1,2,nproc]\n",
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
    else if (flag == "--epochs")
      args.epochs = std::stoi(value());
    else if (flag == "--keep") args.keep = true;
    else if (flag == "--existing")
      args.existing = true;
    else if (flag == "--scaling") {
      std::string list = value();
      for (size_t at = 0; at <= list.size();) {
        size_t comma = list.find(',', at);
        if (comma == std::string::npos) comma = list.size();
        const std::string item = list.substr(at, comma - at);
        args.scaling.push_back(item == "nproc" ? static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) : std::stoi(item));
        at = comma + 1;
      }
    } else
      Usage(("unknown flag " + flag).c_str());
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
  double first_batch_seconds = 0;  // from Open to the first batch in hand
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t peak_buffered = 0;
  double wait_seconds = 0;
  uint64_t allocations = 0;  // heap allocations during the pass (Open and Close included)
  uint64_t minor_faults = 0;
  double cpu_seconds = 0;  // user + system, all of the process's threads
  // From the first batch of the second epoch on (when epochs > 1).
  uint64_t steady_bytes = 0;
  uint64_t steady_allocations = 0;
  uint64_t steady_minor_faults = 0;
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
  options.epochs = static_cast<uint64_t>(args.epochs);
  const uint64_t allocations_before = g_allocations.load();
  const uint64_t faults_before = MinorFaults();
  const double cpu_before = CpuSeconds(RUSAGE_SELF);
  const auto start = std::chrono::steady_clock::now();
  auto loader = spool::loader::DataLoader::Open(options);
  Check(loader.status(), "open loader");
  PassResult result;
  uint64_t steady_allocations = 0, steady_faults = 0, steady_bytes = 0;
  while (true) {
    auto batch = (*loader)->Next();
    Check(batch.status(), "next");
    if (!*batch) break;
    if (result.records == 0) {
      result.first_batch_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if ((*batch)->epoch == 1 && steady_allocations == 0) {
      steady_allocations = g_allocations.load();
      steady_faults = MinorFaults();
      steady_bytes = result.bytes;
    }
    for (std::string_view record : (*batch)->records) result.bytes += record.size();
    result.records += (*batch)->records.size();
  }
  if (steady_allocations != 0) {
    result.steady_allocations = g_allocations.load() - steady_allocations;
    result.steady_minor_faults = MinorFaults() - steady_faults;
    result.steady_bytes = result.bytes - steady_bytes;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.allocations = g_allocations.load() - allocations_before;
  result.minor_faults = MinorFaults() - faults_before;
  result.cpu_seconds = CpuSeconds(RUSAGE_SELF) - cpu_before;
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
    if (r.records != args.records * static_cast<uint64_t>(args.epochs)) {
      std::fprintf(stderr, "loader_bench: %s delivered %llu records, expected %llu\n", name.c_str(),
                   static_cast<unsigned long long>(r.records),
                   static_cast<unsigned long long>(args.records * static_cast<uint64_t>(args.epochs)));
      std::exit(1);
    }
    const double gb = r.bytes / 1e9;
    std::printf(
        "  %-6s pass %d: %8.0f records/s %8.1f MB/s  (first batch %.3f s, Next() waited %.2f s, peak buffered %s; "
        "per GB: %.0f allocations, %.0f page faults, %.2f CPU s; %.1f cores busy)\n",
        name.c_str(), pass + 1, r.records / r.seconds, r.bytes / r.seconds / 1e6, r.first_batch_seconds, r.wait_seconds,
        spool::FormatBytes(r.peak_buffered).c_str(), r.allocations / gb, r.minor_faults / gb, r.cpu_seconds / gb,
        r.cpu_seconds / r.seconds);
    if (r.steady_bytes > 0) {
      const double steady_gb = r.steady_bytes / 1e9;
      std::printf("         steady state (epochs 2..%d): per GB %.0f allocations, %.0f page faults\n", args.epochs,
                  r.steady_allocations / steady_gb, r.steady_minor_faults / steady_gb);
    }
    if (out.best.seconds == 0 || r.seconds < out.best.seconds) out.best = r;
  }
  out.peak_rss_kib = ReadStatusKiB("VmHWM:");
  PrintMemory(("after the " + name + " passes").c_str());
  return out;
}

struct Aggregate {
  double mbps = 0;                // all processes' bytes over the slowest one's time
  double cpu_seconds_per_gb = 0;  // the processes' user + system CPU
  double cores_busy = 0;          // their CPU seconds over the wall time
};

// K processes at once each run `work` (which returns bytes read) after a
// common start.
template <typename Work>
Aggregate AggregateRun(int processes, Work work) {
  const double cpu_before = CpuSeconds(RUSAGE_CHILDREN);
  int go[2];
  int done[2];
  if (::pipe(go) != 0 || ::pipe(done) != 0) Check(spool::InternalError("pipe"), "scaling");
  std::vector<pid_t> children;
  for (int k = 0; k < processes; ++k) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(3);
      const uint64_t bytes = work();
      if (::write(done[1], &bytes, sizeof bytes) != sizeof bytes) ::_exit(3);
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(done[1]);
  const auto start = std::chrono::steady_clock::now();
  const std::string starts(static_cast<size_t>(processes), 'g');
  if (::write(go[1], starts.data(), starts.size()) != static_cast<ssize_t>(starts.size())) {
    Check(spool::InternalError("start"), "scaling");
  }
  uint64_t total = 0;
  for (int k = 0; k < processes; ++k) {
    uint64_t bytes = 0;
    if (::read(done[0], &bytes, sizeof bytes) != sizeof bytes) Check(spool::InternalError("a child failed"), "scaling");
    total += bytes;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
  ::close(go[1]);
  ::close(done[0]);
  const double cpu = CpuSeconds(RUSAGE_CHILDREN) - cpu_before;
  return Aggregate{total / seconds / 1e6, cpu / (total / 1e9), cpu / seconds};
}

void Scaling(const Args& args, const std::string& manifest) {
  auto location = spool::OpenLocation(manifest);
  Check(location.status(), manifest.c_str());
  const std::vector<std::string> keys = ShardKeys(*location->store, location->key);
  std::printf(
      "\nscaling: K processes at once over the same page-cached local shards (aggregate MB/s; the processes' CPU s "
      "per GB and cores busy)\n");
  for (int k : args.scaling) {
    const Aggregate loader = AggregateRun(k, [&] { return ReadOnce(args, manifest).bytes; });
    const Aggregate plain = AggregateRun(k, [&] {
      std::vector<char> buffer(256 << 10);
      uint64_t bytes = 0;
      for (const std::string& key : keys) {
        const int fd = ::open(("/" + key).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) ::_exit(4);
        ssize_t n;
        while ((n = ::read(fd, buffer.data(), buffer.size())) > 0) bytes += static_cast<uint64_t>(n);
        ::close(fd);
      }
      return bytes;
    });
    std::printf(
        "  K=%-3d loader %8.1f MB/s (%.2f CPU s/GB, %4.1f cores)  plain read() %8.1f MB/s (%.2f CPU s/GB, %4.1f cores) "
        " (%.2fx)\n",
        k, loader.mbps, loader.cpu_seconds_per_gb, loader.cores_busy, plain.mbps, plain.cpu_seconds_per_gb,
        plain.cores_busy, loader.mbps / plain.mbps);
  }
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
  auto dataset = [&](const std::string& prefix) {
    return args.existing ? prefix + ".manifest.json" : WriteDataset(args, prefix);
  };
  const std::string s3_manifest = with_s3 ? dataset(s3_prefix) : "";
  const std::string local_manifest = dataset(local_prefix);
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
  if (!args.scaling.empty()) Scaling(args, local_manifest);
  if (!args.keep && !args.existing) {
    if (with_s3) Cleanup(s3_prefix, s3_manifest);
    Cleanup(local_prefix, local_manifest);
  }
  return 0;
}
