// TFRecord throughput, single consumer thread: writing and reading 32 MiB of
// 100 KB or 1 KB records, uncompressed and GZIP, on the memory store and on
// local files, next to the ceilings on the same bytes: memcpy, CRC32C (every
// record byte is checksummed once) and raw inflate of the same GZIP file
// (zlib and ISA-L) and deflate with TensorFlow's settings. Bytes/s counts
// record payload bytes; records/s is given as a counter.
//
// Rates are per second of CPU used by the whole process (all threads, the
// read-ahead workers included), so they measure the work each byte costs and
// stay meaningful on a busy machine; the Time column is wall-clock.
//
// Run: records_bench [--benchmark_filter=Read] ; local files go to $TMPDIR.
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <unistd.h>

#include <cstring>
#include <map>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#if SPOOL_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "spool/core/crc32c.h"
#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "spool/records/compressed_stream.h"
#include "spool/records/record_reader.h"
#include "spool/records/record_writer.h"

namespace spool::records {
namespace {

constexpr size_t kDatasetBytes = 32 << 20;

// Records whose bytes come from a 16-letter alphabet: they compress about
// 2:1, like typical feature payloads, so GZIP does real work both ways.
const std::vector<std::string>& Records(size_t record_size) {
  static std::map<size_t, std::vector<std::string>> cache;
  auto& records = cache[record_size];
  if (records.empty()) {
    std::mt19937_64 rng(record_size);
    records.resize(kDatasetBytes / record_size);
    for (auto& record : records) {
      record.resize(record_size);
      for (size_t i = 0; i < record_size; i += 16) {
        uint64_t bits = rng();
        for (size_t j = 0; j < 16 && i + j < record_size; ++j) record[i + j] = static_cast<char>('a' + ((bits >> (4 * j)) & 15));
      }
    }
  }
  return records;
}

// The stores: "mem" (bucket) or "local" (a temp folder).
struct Target {
  ObjectStore* store;
  std::string prefix;
};

Target GetTarget(bool local) {
  static MemoryStore memory("records-bench");
  static LocalStore files;
  // A folder of our own, removed at exit.
  static const struct Folder {
    Folder() : path(std::filesystem::temp_directory_path() / ("spool-records-bench-" + std::to_string(getpid()))) {
      std::filesystem::create_directories(path);
    }
    ~Folder() { std::filesystem::remove_all(path); }
    std::filesystem::path path;
  } folder;
  return local ? Target{&files, folder.path.string().substr(1) + "/"} : Target{&memory, ""};
}

std::string KeyFor(const Target& target, size_t record_size, Compression compression) {
  return target.prefix + "bench-" + std::to_string(record_size) + ".tfrecord" +
         std::string(CompressionExtension(compression));
}

void WriteDataset(const Target& target, const std::string& key, size_t record_size) {
  auto writer = RecordWriter::Open(*target.store, key).value();
  for (const auto& record : Records(record_size)) {
    if (!writer->Write(record).ok()) std::abort();
  }
  if (!writer->Close().ok()) std::abort();
}

void SetCounters(benchmark::State& state, size_t record_size) {
  const auto& records = Records(record_size);
  const double iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(iterations * records.size() * record_size));
  state.counters["records/s"] =
      benchmark::Counter(iterations * static_cast<double>(records.size()), benchmark::Counter::kIsRate);
}

// args: record size, gzip (0 NONE, 1 GZIP), local (0 memory store, 1 local files)
void BM_Write(benchmark::State& state) {
  const size_t record_size = static_cast<size_t>(state.range(0));
  const Compression compression = state.range(1) != 0 ? Compression::kGzip : Compression::kNone;
  const Target target = GetTarget(state.range(2) != 0);
  const std::string key = KeyFor(target, record_size, compression);
  Records(record_size);
  for (auto _ : state) WriteDataset(target, key, record_size);
  SetCounters(state, record_size);
}

// A fourth arg of 0 turns read-ahead off: everything on the calling thread.
void BM_Read(benchmark::State& state) {
  const size_t record_size = static_cast<size_t>(state.range(0));
  const Compression compression = state.range(1) != 0 ? Compression::kGzip : Compression::kNone;
  const Target target = GetTarget(state.range(2) != 0);
  const std::string key = KeyFor(target, record_size, compression);
  WriteDataset(target, key, record_size);
  RecordReaderOptions options;
  if (state.range(3) == 0) options.io.read_ahead = 0;
  for (auto _ : state) {
    auto reader = RecordReader::Open(*target.store, key, options).value();
    std::string_view record;
    size_t count = 0;
    while (reader->Next(&record).value()) ++count;
    if (count != Records(record_size).size()) std::abort();
  }
  SetCounters(state, record_size);
}

// The same bytes in one buffer, for the ceilings.
const std::string& Framed(size_t record_size) {
  static std::map<size_t, std::string> cache;
  auto& framed = cache[record_size];
  if (framed.empty()) {
    const Target target = GetTarget(false);
    WriteDataset(target, KeyFor(target, record_size, Compression::kNone), record_size);
    framed = ReadAll(*target.store, KeyFor(target, record_size, Compression::kNone)).value();
  }
  return framed;
}

void BM_Memcpy(benchmark::State& state) {
  const std::string& source = Framed(static_cast<size_t>(state.range(0)));
  std::string destination(source.size(), '\0');
  for (auto _ : state) {
    std::memcpy(destination.data(), source.data(), source.size());
    benchmark::DoNotOptimize(destination.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * source.size()));
}

void BM_Crc32c(benchmark::State& state) {
  const std::string& source = Framed(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(crc32c::Value(source));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * source.size()));
  state.SetLabel(crc32c::ImplementationName());
}

// Inflating the whole GZIP file into a reused 1 MiB buffer: what a GZIP
// reader cannot beat. Bytes/s counts decompressed bytes.
void BM_InflateZlib(benchmark::State& state) {
  const size_t record_size = static_cast<size_t>(state.range(0));
  const Target target = GetTarget(false);
  const std::string key = KeyFor(target, record_size, Compression::kGzip);
  WriteDataset(target, key, record_size);
  const std::string gz = ReadAll(*target.store, key).value();
  std::vector<char> out(1 << 20);
  size_t total = 0;
  for (auto _ : state) {
    z_stream s{};
    inflateInit2(&s, MAX_WBITS + 16);
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
    s.avail_in = static_cast<uInt>(gz.size());
    int rc = Z_OK;
    total = 0;
    while (rc == Z_OK) {
      s.next_out = reinterpret_cast<Bytef*>(out.data());
      s.avail_out = static_cast<uInt>(out.size());
      rc = inflate(&s, Z_NO_FLUSH);
      total += out.size() - s.avail_out;
    }
    inflateEnd(&s);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * total));
}

// Deflating the framed records with TensorFlow's settings (level 6, memory
// level 9), what a GZIP writer cannot beat. Bytes/s counts input bytes.
void BM_DeflateZlib(benchmark::State& state) {
  const std::string& framed = Framed(static_cast<size_t>(state.range(0)));
  std::vector<char> out(deflateBound(nullptr, framed.size()));
  for (auto _ : state) {
    z_stream s{};
    deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, MAX_WBITS + 16, 9, Z_DEFAULT_STRATEGY);
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(framed.data()));
    s.avail_in = static_cast<uInt>(framed.size());
    s.next_out = reinterpret_cast<Bytef*>(out.data());
    s.avail_out = static_cast<uInt>(out.size());
    if (deflate(&s, Z_FINISH) != Z_STREAM_END) std::abort();
    deflateEnd(&s);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * framed.size()));
}

// spool's Deflater over the same framed records at the default level
// (zlib, TensorFlow's bytes) and the fast one (ISA-L level 1), fed in the
// RecordWriter's 4 MiB appends. Bytes/s counts input bytes; the label gives
// the compressed size as a share of the input.
void BM_Deflater(benchmark::State& state) {
  const std::string& framed = Framed(static_cast<size_t>(state.range(0)));
  const int level = static_cast<int>(state.range(1));
  std::string out;
  for (auto _ : state) {
    out.clear();
    auto deflater = Deflater::Create(Compression::kGzip, level).value();
    for (size_t at = 0; at < framed.size(); at += 4 << 20) {
      if (!deflater->Deflate(std::string_view(framed).substr(at, 4 << 20), &out).ok()) std::abort();
    }
    if (!deflater->Finish(&out).ok()) std::abort();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * framed.size()));
  state.SetLabel(std::string(level == Deflater::kFastLevel ? "fast" : "default") + ", output " +
                 std::to_string(100 * out.size() / framed.size()) + "% of input");
}

#if SPOOL_HAVE_ISAL
void BM_InflateIsal(benchmark::State& state) {
  const size_t record_size = static_cast<size_t>(state.range(0));
  const Target target = GetTarget(false);
  const std::string key = KeyFor(target, record_size, Compression::kGzip);
  WriteDataset(target, key, record_size);
  const std::string gz = ReadAll(*target.store, key).value();
  std::vector<char> out(1 << 20);
  auto st = std::make_unique<inflate_state>();
  size_t total = 0;
  for (auto _ : state) {
    isal_inflate_init(st.get());
    st->crc_flag = ISAL_GZIP;
    st->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(gz.data()));
    st->avail_in = static_cast<uint32_t>(gz.size());
    total = 0;
    while (st->block_state != ISAL_BLOCK_FINISH) {
      st->next_out = reinterpret_cast<uint8_t*>(out.data());
      st->avail_out = static_cast<uint32_t>(out.size());
      if (isal_inflate(st.get()) < 0) std::abort();
      total += out.size() - st->avail_out;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * total));
}
BENCHMARK(BM_InflateIsal)->Arg(100000)->Arg(1000)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
#endif

void WriteArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"record", "gzip", "local"});
  for (int64_t size : {100000, 1000}) {
    for (int64_t compression : {0, 1}) {
      for (int64_t local : {0, 1}) b->Args({size, compression, local});
    }
  }
  b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
}

void ReadArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"record", "gzip", "local", "readahead"});
  for (int64_t size : {100000, 1000}) {
    for (int64_t compression : {0, 1}) {
      for (int64_t local : {0, 1}) {
        for (int64_t read_ahead : {1, 0}) b->Args({size, compression, local, read_ahead});
      }
    }
  }
  b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
}

BENCHMARK(BM_Memcpy)->Arg(100000)->Arg(1000)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_Crc32c)->Arg(100000)->Arg(1000)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_InflateZlib)->Arg(100000)->Arg(1000)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_DeflateZlib)->Arg(100000)->Arg(1000)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_Deflater)
    ->Args({100000, Deflater::kDefaultLevel})
    ->Args({100000, Deflater::kFastLevel})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK(BM_Write)->Apply(WriteArgs);
BENCHMARK(BM_Read)->Apply(ReadArgs);

}  // namespace
}  // namespace spool::records

BENCHMARK_MAIN();
