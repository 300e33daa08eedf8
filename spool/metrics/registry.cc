#include "spool/metrics/registry.h"

#include <utility>

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
  std::lock_guard lock(mu_);
  for (const auto& [id, collector] : collectors_) collector(writer);
}

std::string MetricsRegistry::Text() const {
  MetricsWriter writer;
  Collect(writer);
  return writer.Text();
}

}  // namespace spool::metrics
