#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

#include "spool/core/bytes.h"

namespace spool::cli {
namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

std::string Amount(Progress::Unit unit, double amount) {
  if (unit == Progress::Unit::kBytes) return FormatBytes(static_cast<uint64_t>(amount));
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f records", amount);
  return text;
}

std::string Duration(double seconds) {
  long total = static_cast<long>(seconds + 0.5);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof(text), "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(text, sizeof(text), "%ld:%02ld", total / 60, total % 60);
  }
  return text;
}

}  // namespace

Progress::Progress(const GlobalOptions& global, Unit unit, std::optional<uint64_t> total)
    : enabled_(!global.quiet && !global.json && ::isatty(STDOUT_FILENO) == 1), unit_(unit), total_(total) {}

Progress::~Progress() { Finish(); }

std::string Progress::Render(Unit unit, uint64_t done, std::optional<uint64_t> total, double seconds) {
  std::string line = Amount(unit, static_cast<double>(done));
  if (total) line += " / " + Amount(unit, static_cast<double>(*total));
  double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  line += "  " + Amount(unit, rate) + "/s";
  if (total && rate > 0 && done < *total) line += "  ETA " + Duration(static_cast<double>(*total - done) / rate);
  return line;
}

void Progress::Add(uint64_t amount) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  done_ += amount;
  DrawLocked(false);
}

void Progress::AddTotal(uint64_t amount) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  total_ = total_.value_or(0) + amount;
}

void Progress::Finish() {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  if (finished_) return;
  DrawLocked(true);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  finished_ = true;
}

void Progress::DrawLocked(bool force) {
  if (finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  double seconds = std::chrono::duration<double>(now - start_).count();
  std::string line = Render(unit_, done_, total_, seconds);
  std::fprintf(stdout, "\r\033[K%s", line.c_str());
  std::fflush(stdout);
}

}  // namespace spool::cli
