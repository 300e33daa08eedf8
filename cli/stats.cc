#include "cli/stats.h"

#include <cstdio>
#include <string>

#include "cli/output.h"
#include "spool/core/bytes.h"

namespace spool::cli {
namespace {

std::string Seconds(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, value < 0.1 ? "%.4f" : "%.3f", value);
  return buffer;
}

std::string HistogramJson(const HistogramCounts& histogram) {
  return "{\"count\":" + std::to_string(histogram.count) + ",\"sum\":" + Seconds(histogram.sum) +
         ",\"p50\":" + Seconds(HistogramQuantile(histogram, 0.5)) +
         ",\"p99\":" + Seconds(HistogramQuantile(histogram, 0.99)) + "}";
}

}  // namespace

double HistogramQuantile(const HistogramCounts& histogram, double q) {
  if (histogram.count == 0) return 0;
  const double rank = q * static_cast<double>(histogram.count);
  uint64_t below = 0;
  for (size_t i = 0; i < histogram.buckets.size(); ++i) {
    const uint64_t in_bucket = histogram.buckets[i];
    if (static_cast<double>(below + in_bucket) >= rank && in_bucket > 0) {
      const double lower = i == 0 ? 0 : kLatencyBuckets[i - 1];
      if (i == kLatencyBuckets.size()) return lower;  // the unbounded bucket: its lower bound
      const double upper = kLatencyBuckets[i];
      return lower + (upper - lower) * (rank - static_cast<double>(below)) / static_cast<double>(in_bucket);
    }
    below += in_bucket;
  }
  return kLatencyBuckets.back();
}

void PrintStats(const RequestCounts& counts, std::chrono::duration<double> elapsed, bool json) {
  uint64_t errors = 0, stalls = 0;
  for (const RequestOpCounts& op : counts.ops) {
    errors += op.errors_4xx + op.errors_5xx + op.errors_transport;
    stalls += op.stalls;
  }
  if (json) {
    std::string out = "{\"stats\":{\"seconds\":" + Seconds(elapsed.count()) +
                      ",\"requests\":" + std::to_string(counts.requests()) +
                      ",\"bytes_sent\":" + std::to_string(counts.bytes_sent()) +
                      ",\"bytes_received\":" + std::to_string(counts.bytes_received()) +
                      ",\"retries\":" + std::to_string(counts.retries) +
                      ",\"throttles\":" + std::to_string(counts.throttles) + ",\"errors\":" + std::to_string(errors) +
                      ",\"stalls\":" + std::to_string(stalls) + ",\"ops\":{";
    bool first = true;
    for (size_t i = 0; i < kRequestOps; ++i) {
      const RequestOpCounts& op = counts.ops[i];
      if (op.requests == 0) continue;
      out += (first ? "" : ",") + JsonString(RequestOpName(static_cast<RequestOp>(i))) +
             ":{\"requests\":" + std::to_string(op.requests) + ",\"bytes_sent\":" + std::to_string(op.bytes_sent) +
             ",\"bytes_received\":" + std::to_string(op.bytes_received) +
             ",\"errors_4xx\":" + std::to_string(op.errors_4xx) + ",\"errors_5xx\":" + std::to_string(op.errors_5xx) +
             ",\"errors_transport\":" + std::to_string(op.errors_transport) +
             ",\"stalls\":" + std::to_string(op.stalls) + ",\"retries\":" + std::to_string(op.retries) +
             ",\"throttles\":" + std::to_string(op.throttles) + ",\"latency_seconds\":" + HistogramJson(op.latency) +
             ",\"first_byte_seconds\":" + HistogramJson(op.first_byte) + "}";
      first = false;
    }
    std::fprintf(stderr, "%s}}}\n", out.c_str());
    return;
  }
  std::string ops;
  for (size_t i = 0; i < kRequestOps; ++i) {
    if (counts.ops[i].requests == 0) continue;
    ops += (ops.empty() ? "" : ", ") + std::to_string(counts.ops[i].requests) + " " +
           std::string(RequestOpName(static_cast<RequestOp>(i)));
  }
  std::fprintf(stderr, "spool stats: %llu requests in %s s%s%s; sent %s, received %s; %llu retries (%llu throttled), "
               "%llu errors, %llu stalls\n",
               static_cast<unsigned long long>(counts.requests()), Seconds(elapsed.count()).c_str(),
               ops.empty() ? "" : ": ", ops.c_str(), FormatBytes(counts.bytes_sent()).c_str(),
               FormatBytes(counts.bytes_received()).c_str(), static_cast<unsigned long long>(counts.retries),
               static_cast<unsigned long long>(counts.throttles), static_cast<unsigned long long>(errors),
               static_cast<unsigned long long>(stalls));
  for (size_t i = 0; i < kRequestOps; ++i) {
    const RequestOpCounts& op = counts.ops[i];
    if (op.requests == 0) continue;
    std::fprintf(stderr, "  %-12s %6llu  latency p50 %s s p99 %s s  first byte p50 %s s\n",
                 std::string(RequestOpName(static_cast<RequestOp>(i))).c_str(),
                 static_cast<unsigned long long>(op.requests), Seconds(HistogramQuantile(op.latency, 0.5)).c_str(),
                 Seconds(HistogramQuantile(op.latency, 0.99)).c_str(),
                 Seconds(HistogramQuantile(op.first_byte, 0.5)).c_str());
  }
}

}  // namespace spool::cli
