// The round-trip property shared by the memory, local and S3 tests: random
// records (0 bytes to 4 MiB) written with random options read back equal,
// from the start and from random resume points.
#pragma once

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spool/core/storage/object_store.h"
#include "spool/records/record_reader.h"
#include "spool/records/record_writer.h"
#include "tests/records/test_util.h"

namespace spool::records::testing {

inline size_t RandomRecordSize(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0: return 0;
    case 1: return 4u << 20;                  // the largest
    case 2: return rng() % (4u << 20);        // anything up to it
    case 3: return rng() % (300u << 10);      // around TF's 256 KiB buffers
    default: return rng() % 2000;             // typical small records
  }
}

// Compressible or not: half the records repeat a short pattern.
inline std::string RandomRecord(std::mt19937_64& rng) {
  const size_t size = RandomRecordSize(rng);
  if (rng() % 2 == 0) return RandomBytes(rng, size);
  std::string pattern = RandomBytes(rng, 1 + rng() % 64);
  std::string out;
  out.reserve(size);
  while (out.size() < size) out.append(pattern, 0, std::min(pattern.size(), size - out.size()));
  return out;
}

inline void RoundTrip(ObjectStore& store, const std::string& key_prefix, uint64_t seed, int trials) {
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const Compression compression = static_cast<Compression>(rng() % 3);
    const std::string key =
        key_prefix + "trial-" + std::to_string(trial) + ".tfrecord" + std::string(CompressionExtension(compression));
    SCOPED_TRACE("seed " + std::to_string(seed) + " trial " + std::to_string(trial) + " " + key);
    std::vector<std::string> records(rng() % 12);
    for (auto& record : records) record = RandomRecord(rng);

    RecordWriterOptions writer_options;
    writer_options.append_size = 4096 + rng() % (8 << 20);
    // TensorFlow's default level, ISA-L's fast one, and two of zlib's; a
    // level is refused for an uncompressed file, so those keep the default.
    constexpr int kLevels[] = {Deflater::kDefaultLevel, Deflater::kFastLevel, 1, 9};
    const int level = kLevels[rng() % 4];
    writer_options.compression_level = compression == Compression::kNone ? Deflater::kDefaultLevel : level;
    auto writer = RecordWriter::Open(store, key, writer_options);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    for (const auto& record : records) SPOOL_ASSERT_OK((*writer)->Write(record));
    auto file = (*writer)->Close();
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_EQ(file->records, records.size());

    RecordReaderOptions options;
    options.io.chunk_size = 4096 + rng() % (6 << 20);
    options.io.read_ahead = rng() % 2 == 0 ? 0 : rng() % (16 << 20);
    auto reader = RecordReader::Open(store, key, options);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<uint64_t> offsets;
    std::string_view view;
    size_t i = 0;
    while (true) {
      auto more = (*reader)->Next(&view);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      ASSERT_LT(i, records.size());
      EXPECT_TRUE(view == records[i]) << "record " << i << " differs";
      offsets.push_back((*reader)->record_offset());
      ++i;
    }
    EXPECT_EQ(i, records.size());
    if (records.empty()) continue;
    // Resume at a random record by its offset, as a loader would.
    const size_t start = rng() % records.size();
    auto resumed = RecordReader::Open(store, key, options);
    ASSERT_TRUE(resumed.ok());
    SPOOL_ASSERT_OK((*resumed)->SeekToOffset(offsets[start]));
    for (size_t j = start; j < records.size(); ++j) {
      auto more = (*resumed)->Next(&view);
      ASSERT_TRUE(more.ok() && *more) << "resumed record " << j;
      EXPECT_TRUE(view == records[j]) << "resumed record " << j << " differs";
    }
  }
}

}  // namespace spool::records::testing
