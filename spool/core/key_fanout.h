// Prefix fan-out: the folder label that spreads many objects (a dataset's
// shards, a checkpoint's ranks) over N key prefixes, so that a job's
// requests are served by N of S3's per-prefix request budgets (5,500
// GET/HEAD and 3,500 PUT/COPY/POST/DELETE per second each) instead of one.
// docs/performance.md, "Spreading keys over prefixes", has the arithmetic.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace spool {

inline constexpr int kMaxPrefixFanout = 4096;

// The label of item `index` among `fanout` prefixes: bucket index % fanout
// written as lowercase hex after an odd multiplier (a bijection modulo
// 16^width, so the `fanout` labels are distinct and spread over the hex
// space), width = max(2, hex digits of fanout - 1): "3f", "a1", ... Items
// that follow each other land in different buckets, and every bucket holds
// the same number of items (+-1). "" when fanout <= 1 (no fan-out).
std::string FanoutLabel(uint64_t index, int fanout);

}  // namespace spool
