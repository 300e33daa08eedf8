#include "spool/core/large_buffer.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "spool/core/buffer_pool.h"

namespace spool {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// The kernel's transparent huge page mode: "always", "madvise" or "never"
// (the bracketed word of the sysfs file); empty where there is none.
std::string ThpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

// Bytes of the mapping holding `address` that are backed by huge pages
// (AnonHugePages of /proc/self/smaps).
uint64_t HugeBytesAround(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stoull(line.substr(std::strlen("AnonHugePages:"))) * 1024;
    }
  }
  return 0;
}

bool UnderSanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

TEST(LargeBufferTest, BuffersOfTwoMiBAndMoreAreAlignedToTwoMiB) {
  for (size_t size : {kHugePage, size_t{4} << 20, size_t{16} << 20, (size_t{5} << 20) + 3}) {
    LargeBuffer buffer = AllocateLargeBuffer(size);
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.get()) % kHugePage, 0u) << size;
    std::memset(buffer.get(), 0x5a, size);  // all of it is ours to write
    EXPECT_EQ(buffer[size - 1], 0x5a);
  }
}

TEST(LargeBufferTest, SmallAndEmptyBuffersWork) {
  LargeBuffer empty = AllocateLargeBuffer(0);
  EXPECT_NE(empty, nullptr);
  LargeBuffer small = AllocateLargeBuffer(100);
  ASSERT_NE(small, nullptr);
  std::memset(small.get(), 1, 100);
}

TEST(LargeBufferTest, AWrittenLargeBufferIsBackedByHugePages) {
  const std::string mode = ThpMode();
  if (mode != "madvise" && mode != "always") GTEST_SKIP() << "transparent huge pages are '" << mode << "' here";
  if (UnderSanitizer()) GTEST_SKIP() << "the sanitizer's allocator maps memory its own way";
  constexpr size_t kSize = size_t{16} << 20;
  LargeBuffer buffer = AllocateLargeBuffer(kSize);
  std::memset(buffer.get(), 1, kSize);
  // The kernel may fall back to small pages when no free 2 MiB block is at
  // hand; on an idle test machine most of 16 MiB is huge.
  EXPECT_GE(HugeBytesAround(buffer.get()), kHugePage);
}

TEST(LargeBufferTest, AdviceOnAStringsCapacityGivesItHugePages) {
  const std::string mode = ThpMode();
  if (mode != "madvise" && mode != "always") GTEST_SKIP() << "transparent huge pages are '" << mode << "' here";
  if (UnderSanitizer()) GTEST_SKIP() << "the sanitizer's allocator maps memory its own way";
  constexpr size_t kSize = size_t{16} << 20;
  std::string part;
  part.reserve(kSize);
  AdviseHugePages(part.data(), kSize);
  part.append(kSize, 'p');
  EXPECT_GE(HugeBytesAround(part.data() + kSize / 2), kHugePage);
}

TEST(LargeBufferTest, AdviceOnSmallOrUnalignedRangesIsHarmless) {
  char local[64];
  AdviseHugePages(local, sizeof(local));  // no whole 2 MiB page inside: nothing to do
  std::string text(3 << 20, 'x');
  AdviseHugePages(text.data() + 1, text.size() - 1);
  EXPECT_EQ(text[text.size() - 1], 'x');
}

TEST(LargeBufferTest, ThePoolsNewBuffersAreLargeBuffers) {
  BufferPool pool(0);
  BufferPool::Buffer buffer = pool.Take(size_t{4} << 20);
  ASSERT_TRUE(buffer);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % kHugePage, 0u);
}

}  // namespace
}  // namespace spool
