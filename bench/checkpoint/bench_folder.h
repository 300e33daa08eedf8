// What the checkpoint benchmarks share: a checkpoint-like folder of random
// bytes, and the median of a run's rounds.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace spool::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// A checkpoint-like folder: `files` files of mixed sizes adding up to `total`
// bytes (a few large shards, several small index/metadata files).
inline void MakeFolder(const std::filesystem::path& folder, uint64_t total, int files) {
  std::filesystem::create_directories(folder);
  std::vector<double> weights;
  for (int i = 0; i < files; ++i) weights.push_back(i < 4 ? 8.0 + i : 1.0 / (1 + i));
  double sum = 0;
  for (double w : weights) sum += w;
  std::mt19937_64 random(42);
  std::vector<uint64_t> block(1 << 17);
  for (int i = 0; i < files; ++i) {
    uint64_t size = static_cast<uint64_t>(static_cast<double>(total) * weights[i] / sum);
    std::ofstream out(folder / ("part-" + std::to_string(i) + ".bin"), std::ios::binary);
    for (uint64_t written = 0; written < size;) {
      for (auto& word : block) word = random();
      uint64_t n = std::min<uint64_t>(size - written, block.size() * 8);
      out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
      written += n;
    }
  }
}

}  // namespace spool::bench
