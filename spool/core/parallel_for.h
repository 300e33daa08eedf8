// ParallelFor: runs body(0) .. body(count - 1) on an executor with at most
// `workers` running at once, each worker pulling the next index when done.
// The one "N workers take the next index" loop of spool: ranged reads of
// both backends, GCS's DeleteMany and the checkpoint files use it.
//
// Bounding the workers (rather than submitting one task per item) leaves
// threads free for the per-part tasks that each item submits itself
// (multipart uploads, ranged reads), and keeps whole items from being
// nested inside another item's wait. The calling thread is one of the
// workers (workers - 1 tasks are submitted), so a caller that is itself a
// pool task does work instead of holding a thread idle; once its own items
// are done it waits through TaskGroup::Wait, running queued tasks.
//
// Errors and cancellation: returns the first error. After one, or once the
// caller's CancelToken (current when ParallelFor is called, and carried into
// the workers) is cancelled, no further index is handed out; a cancel is
// reported as Cancelled unless an item failed first. Blocks until every
// started item finished. `body` is called from several threads at once.
#pragma once

#include <cstddef>
#include <functional>

#include "spool/core/executor.h"
#include "spool/core/status.h"

namespace spool {

Status ParallelFor(Executor& executor, size_t count, int workers, const std::function<Status(size_t)>& body);

}  // namespace spool
