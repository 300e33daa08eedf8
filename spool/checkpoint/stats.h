// What a CheckpointManager's saves and restores did (internal): counters
// and latency histograms, lock-free, read by Stats() and the metrics
// registry from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/core/request_counters.h"

namespace spool::checkpoint::internal {

struct StatsBlock {
  std::atomic<uint64_t> saves{0}, save_failures{0}, uploaded_files{0}, uploaded_bytes{0};
  std::atomic<uint64_t> restores{0}, restore_failures{0}, restored_bytes{0};
  std::atomic<int64_t> last_saved_step{-1};
  LatencyHistogram save, blocked, upload, commit, restore, verify;

  CheckpointStats Snapshot() const;
};

// Adds the time since it was made to a histogram when it goes.
class ScopedTimer {
 public:
  explicit ScopedTimer(LatencyHistogram& histogram)
      : histogram_(histogram), started_(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() { histogram_.Add(std::chrono::steady_clock::now() - started_); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  LatencyHistogram& histogram_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace spool::checkpoint::internal
