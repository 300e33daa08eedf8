// ParallelFor: runs body(0) .. body(count - 1) on an executor with at most
// `workers` running at once, each worker pulling the next index when done.
// The one "N workers take the next index" loop of spool: ranged reads of
// both backends, GCS's DeleteMany and the checkpoint files use it.
//
// Bounding the workers (rather than submitting one task per item) leaves
// threads free for the per-part tasks that each item submits itself
// (multipart uploads, ranged reads), and keeps whole items from being
// nested inside another item's wait. Returns the first error; after one,
// workers stop taking new items (a cancelled request fails its body, so a
// cancel stops them the same way). Blocks until every started item
// finished; the waiting thread runs queued tasks meanwhile
// (TaskGroup::Wait). `body` is called from several threads at once.
#pragma once

#include <cstddef>
#include <functional>

#include "spool/core/executor.h"
#include "spool/core/status.h"

namespace spool {

Status ParallelFor(Executor& executor, size_t count, int workers, const std::function<Status(size_t)>& body);

}  // namespace spool
