// --stats: what the command's requests did, on stderr when it ends -- a
// short human summary, or one JSON object with --json. Counted by the
// RequestCounters every store of the command shares (GlobalOptions::counters).
#pragma once

#include <chrono>

#include "spool/core/request_counters.h"

namespace spool::cli {

void PrintStats(const RequestCounts& counts, std::chrono::duration<double> elapsed, bool json);

// The q-quantile (0..1) of a histogram, interpolated within its bucket as
// Prometheus' histogram_quantile does; 0 when empty.
double HistogramQuantile(const HistogramCounts& histogram, double q);

}  // namespace spool::cli
