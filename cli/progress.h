// A one-line progress display for long transfers and conversions: amount
// done, rate and (with a known total) the ETA, redrawn in place at most ten
// times a second. Shown only when standard output is a terminal and neither
// --quiet nor --json was given; otherwise every method does nothing, so
// callers never check. Add() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "cli/global_options.h"

namespace spool::cli {

class Progress {
 public:
  enum class Unit { kBytes, kRecords };

  Progress(const GlobalOptions& global, Unit unit, std::optional<uint64_t> total = std::nullopt);
  ~Progress();  // Finish()

  void Add(uint64_t amount);
  void AddTotal(uint64_t amount);  // the total grew (more files found)
  // Draws the final state and ends the line (once).
  void Finish();
  bool shown() const { return enabled_; }

  // "12.3 MiB / 100.0 MiB  45.6 MiB/s  ETA 0:02" (for tests and the final line).
  static std::string Render(Unit unit, uint64_t done, std::optional<uint64_t> total, double seconds);

 private:
  void DrawLocked(bool force);

  const bool enabled_;
  const Unit unit_;
  std::mutex mu_;
  uint64_t done_ = 0;
  std::optional<uint64_t> total_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  bool finished_ = false;
};

}  // namespace spool::cli
