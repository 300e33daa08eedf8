#include "spool/metrics/registry.h"

#include <utility>

#include "spool/core/throttle.h"
#include "spool/core/version.h"

namespace spool::metrics {

MetricsRegistry::Registration::Registration(Registration&& other) noexcept
    : registry_(std::exchange(other.registry_, nullptr)), id_(other.id_) {}

MetricsRegistry::Registration& MetricsRegistry::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    Reset();
    registry_ = std::exchange(other.registry_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

void MetricsRegistry::Registration::Reset() {
  if (registry_) std::exchange(registry_, nullptr)->Remove(id_);
}

MetricsRegistry& MetricsRegistry::Global() {
  static MetricsRegistry* registry = new MetricsRegistry();  // never destroyed: collectors may outlive statics
  return *registry;
}

MetricsRegistry::Registration MetricsRegistry::Add(Collector collector) {
  std::lock_guard lock(mu_);
  const uint64_t id = next_id_++;
  collectors_.emplace(id, std::move(collector));
  return Registration(this, id);
}

void MetricsRegistry::Remove(uint64_t id) {
  std::lock_guard lock(mu_);
  collectors_.erase(id);
}

void MetricsRegistry::Collect(MetricsWriter& writer) const {
  writer.Gauge("spool_build_info", "spool's version; always 1", {{"version", std::string(VersionString())}}, 1);
  // Every live store's retry quota and concurrency limit (core/throttle.h),
  // labelled store="s3://bucket" (GCS: store="gs:// at <endpoint>").
  RetryThrottle::ForEach([&](const RetryThrottle& throttle) {
    const RetryThrottle::State state = throttle.state();
    const Labels labels{{"store", throttle.store()}};
    writer.Gauge("spool_retry_quota_tokens", "tokens left in the store's retry quota (of 500; a retry costs 5)", labels,
                 state.quota_tokens);
    writer.Gauge("spool_concurrency_limit", "requests the store may have in flight now (cut on throttling)", labels,
                 state.concurrency_limit);
    writer.Gauge("spool_request_rate_limit", "requests per second the store may send now; 0: not limited", labels,
                 state.rate_limit);
    writer.Gauge("spool_requests_in_flight", "the store's requests in flight now", labels, state.in_flight);
    writer.Counter("spool_throttled_responses_total", "answers asking to slow down (429, 503, SlowDown)", labels,
                   static_cast<double>(state.throttled));
    writer.Counter("spool_retry_quota_refusals_total", "retries not made because the retry quota was empty", labels,
                   static_cast<double>(state.quota_refusals));
  });
  std::lock_guard lock(mu_);
  for (const auto& [id, collector] : collectors_) collector(writer);
}

std::string MetricsRegistry::Text() const {
  MetricsWriter writer;
  Collect(writer);
  return writer.Text();
}

}  // namespace spool::metrics
