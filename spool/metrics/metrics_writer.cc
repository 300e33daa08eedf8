#include "spool/metrics/metrics_writer.h"

#include <cmath>
#include <cstdio>

namespace spool::metrics {
namespace {

// Label values escape backslash, double quote and newline; help text
// backslash and newline.
std::string Escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderLabels(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    out += out.empty() ? "{" : ",";
    out += name + "=\"" + Escape(value, true) + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

std::string FormatValue(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
    return buffer;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

std::string FormatBound(double bound) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", bound);
  return buffer;
}

}  // namespace

MetricsWriter::Family& MetricsWriter::FamilyFor(std::string_view name, std::string_view help, Type type) {
  auto found = families_.find(name);
  if (found == families_.end()) found = families_.emplace(std::string(name), Family{type, std::string(help), {}, {}}).first;
  return found->second;
}

void MetricsWriter::Counter(std::string_view name, std::string_view help, const Labels& labels, double value) {
  FamilyFor(name, help, Type::kCounter).values[RenderLabels(labels)] += value;
}

void MetricsWriter::Gauge(std::string_view name, std::string_view help, const Labels& labels, double value) {
  FamilyFor(name, help, Type::kGauge).values[RenderLabels(labels)] += value;
}

void MetricsWriter::Histogram(std::string_view name, std::string_view help, const Labels& labels,
                              const HistogramCounts& counts) {
  HistogramSeries& series = FamilyFor(name, help, Type::kHistogram).histograms[RenderLabels(labels)];
  uint64_t cumulative = 0;
  for (size_t i = 0; i < counts.buckets.size(); ++i) {
    cumulative += counts.buckets[i];
    series.cumulative[i] += static_cast<double>(cumulative);
  }
  series.sum += counts.sum;
  series.count += static_cast<double>(counts.count);
}

std::string MetricsWriter::Text() const {
  std::string out;
  for (const auto& [name, family] : families_) {
    const char* type = family.type == Type::kCounter ? "counter" : family.type == Type::kGauge ? "gauge" : "histogram";
    out += "# HELP " + name + " " + Escape(family.help, false) + "\n";
    out += "# TYPE " + name + " " + type + "\n";
    for (const auto& [labels, value] : family.values) out += name + labels + " " + FormatValue(value) + "\n";
    for (const auto& [labels, series] : family.histograms) {
      // The bound goes last among the labels: "{owner="cli",le="0.5"}".
      const std::string open = labels.empty() ? "{" : labels.substr(0, labels.size() - 1) + ",";
      for (size_t i = 0; i < series.cumulative.size(); ++i) {
        const std::string bound = i < kLatencyBuckets.size() ? FormatBound(kLatencyBuckets[i]) : "+Inf";
        out += name + "_bucket" + open + "le=\"" + bound + "\"} " + FormatValue(series.cumulative[i]) + "\n";
      }
      out += name + "_sum" + labels + " " + FormatValue(series.sum) + "\n";
      out += name + "_count" + labels + " " + FormatValue(series.count) + "\n";
    }
  }
  return out;
}

void WriteRequestMetrics(MetricsWriter& writer, const RequestCounts& counts, const Labels& labels) {
  for (size_t i = 0; i < kRequestOps; ++i) {
    const RequestOpCounts& op = counts.ops[i];
    if (op.requests == 0 && op.retries == 0) continue;
    Labels l = labels;
    l.emplace_back("op", std::string(RequestOpName(static_cast<RequestOp>(i))));
    writer.Counter("spool_requests_total", "HTTP exchanges with the store (attempts; retried ones count again)", l,
                   static_cast<double>(op.requests));
    writer.Counter("spool_request_sent_bytes_total", "request body bytes sent", l,
                   static_cast<double>(op.bytes_sent));
    writer.Counter("spool_request_received_bytes_total", "2xx response body bytes received", l,
                   static_cast<double>(op.bytes_received));
    for (auto [name, value] : {std::pair<const char*, uint64_t>{"4xx", op.errors_4xx}, {"5xx", op.errors_5xx},
                               {"transport", op.errors_transport}}) {
      Labels with_class = l;
      with_class.emplace_back("class", name);
      writer.Counter("spool_request_errors_total",
                     "exchanges that failed: answered 4xx or 5xx, or no answer (transport)", with_class,
                     static_cast<double>(value));
    }
    writer.Counter("spool_request_stalls_total", "exchanges that timed out or stalled (no byte for the stall window)",
                   l, static_cast<double>(op.stalls));
    writer.Counter("spool_request_retries_total", "attempts repeated after a retryable failure", l,
                   static_cast<double>(op.retries));
    writer.Counter("spool_request_throttles_total",
                   "retries after the service asked to slow down (429, 503, SlowDown)", l,
                   static_cast<double>(op.throttles));
    writer.Histogram("spool_request_duration_seconds", "time from sending a request to its complete response", l,
                     op.latency);
    writer.Histogram("spool_request_first_byte_seconds", "time from sending a request to its response headers", l,
                     op.first_byte);
  }
}

}  // namespace spool::metrics
