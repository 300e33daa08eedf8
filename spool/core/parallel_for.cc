#include "spool/core/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "spool/core/cancel.h"

namespace spool {

Status ParallelFor(Executor& executor, size_t count, int workers, const std::function<Status(size_t)>& body) {
  const CancelToken cancel = CancelToken::Current();
  std::atomic<size_t> next{0};
  TaskGroup group(executor);
  auto work = [&]() -> Status {
    for (size_t i = next++; i < count && !group.cancelled(); i = next++) {
      SPOOL_RETURN_IF_ERROR(cancel.Check("work over " + std::to_string(count) + " items"));
      SPOOL_RETURN_IF_ERROR(body(i));
    }
    return OkStatus();
  };
  const size_t started = std::min(count, static_cast<size_t>(std::max(workers, 1)));
  for (size_t w = 1; w < started; ++w) group.Submit(work);
  if (started > 0) {
    Status mine = work();
    // Recorded in the group, so that the submitted workers stop too; the
    // group keeps whichever error came first.
    if (!mine.ok()) group.Cancel(std::move(mine));
  }
  return group.Wait();
}

}  // namespace spool
