#include "spool/core/large_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace spool {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

}  // namespace

LargeBuffer AllocateLargeBuffer(size_t size) {
  void* data = nullptr;
  if (size >= kHugePage) {
    if (::posix_memalign(&data, kHugePage, size) != 0) throw std::bad_alloc();
    AdviseHugePages(data, size);
  } else {
    data = std::malloc(size == 0 ? 1 : size);
    if (data == nullptr) throw std::bad_alloc();
  }
  return LargeBuffer(static_cast<char*>(data));
}

void AdviseHugePages(void* data, size_t size) {
#ifdef MADV_HUGEPAGE
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) & ~(kHugePage - 1);
  // Advice only: a kernel without THP answers EINVAL and the pages stay small.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)size;
#endif
}

}  // namespace spool
