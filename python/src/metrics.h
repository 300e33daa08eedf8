// What the metrics binding shares with the loader and checkpoint bindings:
// request counts and histograms as plain Python dicts.
#pragma once

#include <pybind11/pybind11.h>

#include "spool/core/request_counters.h"

namespace spool::python {

// {"count", "sum", "buckets": [(upper bound in seconds, cumulative count), ...]}.
pybind11::dict HistogramDict(const HistogramCounts& histogram);
// {op name: {"requests", "bytes_sent", ..., "latency_seconds": HistogramDict}}
// for the operations used.
pybind11::dict RequestsDict(const RequestCounts& counts);

}  // namespace spool::python
