// MetricsRegistry: the process's list of things that report metrics. A
// component that owns counters (a DataLoader, a CheckpointManager, a CLI
// command) registers a collector for as long as it lives; the exporter
// (exporter.h) and Snapshot() ask every registered collector to write into
// one MetricsWriter.
//
// Lifetime: Add() returns a Registration; destroying it (or Reset()) removes
// the collector and waits until no collection is running it, so a collector
// may capture its owner's `this` safely. Collectors run on the collecting
// thread (the exporter's, or the caller of Text()), one collection at a
// time; they must only read atomics or take their owner's own locks briefly.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "spool/metrics/metrics_writer.h"

namespace spool::metrics {

using Collector = std::function<void(MetricsWriter&)>;

class MetricsRegistry {
 public:
  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    ~Registration() { Reset(); }
    void Reset();

   private:
    friend class MetricsRegistry;
    Registration(MetricsRegistry* registry, uint64_t id) : registry_(registry), id_(id) {}
    MetricsRegistry* registry_ = nullptr;
    uint64_t id_ = 0;
  };

  // The process's registry: what SPOOL_METRICS_PORT serves.
  static MetricsRegistry& Global();

  [[nodiscard]] Registration Add(Collector collector);
  // Every collector's metrics, plus spool's build info.
  void Collect(MetricsWriter& writer) const;
  std::string Text() const;

 private:
  void Remove(uint64_t id);

  // Held while collecting, so that Remove waits for a collection in flight.
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Collector> collectors_;
};

}  // namespace spool::metrics
