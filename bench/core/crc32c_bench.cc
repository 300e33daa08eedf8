// CRC32C throughput for 4 KiB to 64 MiB buffers: the dispatching Extend (ISA-L
// when spool was built with it), each implementation this CPU can run, the
// plain byte-at-a-time table CRC as the baseline, and memcpy of the same size
// for reference. Buffers are allocated and touched once, so the numbers are
// for warm memory (cache-resident up to 1 MiB, memory-bound at 64 MiB).
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "spool/core/crc32c.h"

namespace {

constexpr size_t kSizes[] = {4 << 10, 64 << 10, 1 << 20, 64 << 20};

const std::vector<uint8_t>& Source() {
  static const std::vector<uint8_t> data = [] {
    std::vector<uint8_t> v(64 << 20);
    std::mt19937_64 rng(42);
    for (size_t i = 0; i + 8 <= v.size(); i += 8) {
      uint64_t word = rng();
      std::memcpy(v.data() + i, &word, 8);
    }
    return v;
  }();
  return data;
}

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);

void BenchCrc(benchmark::State& state, ExtendFn extend) {
  const size_t size = static_cast<size_t>(state.range(0));
  const uint8_t* data = Source().data();
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = extend(crc, data, size);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(size));
}

void BenchMemcpy(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  static std::vector<uint8_t> destination(64 << 20, 1);
  const uint8_t* data = Source().data();
  for (auto _ : state) {
    std::memcpy(destination.data(), data, size);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(size));
}

void Register(const std::string& name, void (*fn)(benchmark::State&, ExtendFn), ExtendFn extend) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), fn, extend);
  for (size_t size : kSizes) b->Arg(static_cast<int64_t>(size));
}

}  // namespace

int main(int argc, char** argv) {
  namespace crc32c = spool::crc32c;
  Register(std::string("crc32c/Extend[") + crc32c::ImplementationName() + "]", BenchCrc, &crc32c::Extend);
  if (crc32c::HasSse42()) Register("crc32c/ExtendSse42", BenchCrc, &crc32c::ExtendSse42);
  Register("crc32c/ExtendPortable", BenchCrc, &crc32c::ExtendPortable);
  Register("crc32c/ExtendTableBytewise", BenchCrc, &crc32c::ExtendTableBytewise);
  auto* copy = benchmark::RegisterBenchmark("memcpy", BenchMemcpy);
  for (size_t size : kSizes) copy->Arg(static_cast<int64_t>(size));

  Source();  // allocate and fill before timing
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
