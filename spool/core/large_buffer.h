// Large buffers backed by transparent huge pages.
//
// Why: memory new to a process costs a page fault per 4 KiB page on first
// touch, and on virtual machines a fault is expensive. On the 2-core VM the
// benchmarks run on, writing 128 MiB of fresh memory took 1.04 s of CPU in
// 4 KiB pages and 0.08 s in 2 MiB ones; a 1 GiB download spent 90% of its
// page faults zero-filling its eight 16 MiB part buffers (docs/performance.md).
// Linux in its default THP mode ("madvise") gives huge pages only to memory
// that asks for them, so the buffers that are written whole (read-ahead
// chunks, transfer parts) ask.
//
// Cost: a huge page is resident whole, so a buffer's RSS rounds up to 2 MiB;
// only buffers of at least 2 MiB ask, and they are filled whole anyway.
//
// Errors: none. Where huge pages are unavailable (THP "never", other
// systems) the buffers keep small pages and everything works as before.
// Threading: free functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace spool {

// Frees what AllocateLargeBuffer returned.
struct LargeBufferDeleter {
  void operator()(char* data) const noexcept { std::free(data); }
};
using LargeBuffer = std::unique_ptr<char[], LargeBufferDeleter>;

// `size` bytes, not zeroed; from 2 MiB on aligned to 2 MiB and advised as
// below, so that all of it can be huge pages. Throws std::bad_alloc when
// memory is exhausted, as `new` does.
LargeBuffer AllocateLargeBuffer(size_t size);

// Asks for huge pages for the whole 2 MiB pages inside [data, data + size),
// for memory someone else allocated (a std::string's reserved capacity).
// Call before the memory is first written: pages already touched stay small
// until the kernel's background merging gets to them.
void AdviseHugePages(void* data, size_t size);

}  // namespace spool
