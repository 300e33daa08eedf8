// Helpers shared by the records tests: reference data, stores, framing.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "spool/core/crc32c.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::records::testing {

// tests/data/tfrecord in the source tree (set by CMake).
inline std::filesystem::path DataDir() { return SPOOL_RECORDS_TEST_DATA; }

using test_support::ReadFile;
using test_support::TempDir;

// TFRecord framing written independently of the library's writer.
inline std::string Frame(const std::vector<std::string>& records) {
  auto masked = [](const char* data, size_t size) { return crc32c::Mask(crc32c::Value(data, size)); };
  auto le = [](uint64_t value, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
    return out;
  };
  std::string out;
  for (const std::string& record : records) {
    std::string length = le(record.size(), 8);
    out += length + le(masked(length.data(), 8), 4) + record + le(masked(record.data(), record.size()), 4);
  }
  return out;
}

inline std::string RandomBytes(std::mt19937_64& rng, size_t size) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    uint64_t value = rng();
    for (size_t j = 0; j < 8 && i + j < size; ++j) out[i + j] = static_cast<char>(value >> (8 * j));
  }
  return out;
}

#define SPOOL_ASSERT_OK(expr)                                     \
  do {                                                            \
    ::spool::Status spool_test_status_ = (expr);                  \
    ASSERT_TRUE(spool_test_status_.ok()) << spool_test_status_.ToString(); \
  } while (0)

#define SPOOL_ASSERT_OK_AND_ASSIGN(lhs, expr)                                          \
  auto SPOOL_CONCAT_(spool_test_result_, __LINE__) = (expr);                             \
  ASSERT_TRUE(SPOOL_CONCAT_(spool_test_result_, __LINE__).ok())                          \
      << SPOOL_CONCAT_(spool_test_result_, __LINE__).status().ToString();                \
  lhs = std::move(SPOOL_CONCAT_(spool_test_result_, __LINE__)).value()

}  // namespace spool::records::testing
