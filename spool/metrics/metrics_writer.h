// MetricsWriter: collects counters, gauges and histograms under Prometheus
// names and labels, and renders them in the Prometheus text exposition
// format (version 0.0.4), what the /metrics endpoint serves and what the
// node exporter's textfile collector reads.
//
// Samples written twice under the same name and labels are summed (several
// loaders of one process report as one `owner="loader"` series): every
// metric spool writes is a counter, a histogram or an additive gauge
// (bytes held), so the sum is the process's value.
//
// Why hand-written: the format is a few lines per family, Debian 12 ships
// no C++ Prometheus client (prometheus-cpp is not packaged), and the tests
// check the output with a real parser (python3-prometheus-client).
//
// Not thread-safe: one writer per collection.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/core/request_counters.h"

namespace spool::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class MetricsWriter {
 public:
  // `name` follows Prometheus naming: spool_..._total for counters,
  // _seconds and _bytes units. The first help text of a name is kept.
  void Counter(std::string_view name, std::string_view help, const Labels& labels, double value);
  void Gauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  // A histogram over kLatencyBuckets (core/request_counters.h).
  void Histogram(std::string_view name, std::string_view help, const Labels& labels, const HistogramCounts& counts);

  // The text exposition of everything written, families sorted by name.
  std::string Text() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct HistogramSeries {
    std::array<double, kLatencyBuckets.size() + 1> cumulative{};  // per bucket bound, +Inf last
    double sum = 0;
    double count = 0;
  };
  struct Family {
    Type type = Type::kCounter;
    std::string help;
    std::map<std::string, double> values;               // rendered labels -> value (counter, gauge)
    std::map<std::string, HistogramSeries> histograms;  // rendered labels -> series (histogram)
  };
  Family& FamilyFor(std::string_view name, std::string_view help, Type type);

  std::map<std::string, Family, std::less<>> families_;
};

// What RequestCounters counted, as spool_request* families with `labels`
// (e.g. owner="loader") plus op="<RequestOpName>"; operations never used are
// left out.
void WriteRequestMetrics(MetricsWriter& writer, const RequestCounts& counts, const Labels& labels);

}  // namespace spool::metrics
