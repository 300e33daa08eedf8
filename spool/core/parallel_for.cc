#include "spool/core/parallel_for.h"

#include <algorithm>
#include <atomic>

namespace spool {

Status ParallelFor(Executor& executor, size_t count, int workers, const std::function<Status(size_t)>& body) {
  std::atomic<size_t> next{0};
  TaskGroup group(executor);
  const size_t started = std::min(count, static_cast<size_t>(std::max(workers, 1)));
  for (size_t w = 0; w < started; ++w) {
    group.Submit([&]() -> Status {
      for (size_t i = next++; i < count && !group.cancelled(); i = next++) {
        SPOOL_RETURN_IF_ERROR(body(i));
      }
      return OkStatus();
    });
  }
  return group.Wait();
}

}  // namespace spool
