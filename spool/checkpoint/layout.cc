#include "spool/checkpoint/layout.h"

#include <charconv>
#include <cstdio>

#include "spool/core/key_fanout.h"

namespace spool::checkpoint {

CheckpointLayout::CheckpointLayout(std::string_view root, int rank_prefix_fanout)
    : root_(root), rank_prefix_fanout_(rank_prefix_fanout) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string CheckpointLayout::Child(std::string_view name) const {
  if (root_.empty()) return std::string(name);
  return root_ + "/" + std::string(name);
}

std::string CheckpointLayout::StepPrefix(int64_t step) const {
  char name[40];
  std::snprintf(name, sizeof name, "step-%012lld/", static_cast<long long>(step));
  return Child(name);
}

std::string CheckpointLayout::FileKey(int64_t step, std::string_view path) const {
  return StepPrefix(step) + std::string(path);
}

std::string CheckpointLayout::ManifestKey(int64_t step) const { return StepPrefix(step) + "MANIFEST.json"; }

std::string CheckpointLayout::SaveFolder(uint64_t save_id) {
  char name[32];
  std::snprintf(name, sizeof(name), "save-%016llx/", static_cast<unsigned long long>(save_id));
  return name;
}

std::string CheckpointLayout::RankFolder(int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05d", rank);
  return name;
}

std::string CheckpointLayout::RankStoredFolder(int rank) const {
  if (rank_prefix_fanout_ <= 1) return RankFolder(rank);
  return FanoutLabel(static_cast<uint64_t>(rank), rank_prefix_fanout_) + "/" + RankFolder(rank);
}

std::string CheckpointLayout::RankPrefix(int64_t step, int rank) const {
  return StepPrefix(step) + RankStoredFolder(rank) + "/";
}

std::string CheckpointLayout::PartsPrefix(int64_t step) const { return StepPrefix(step) + "parts/"; }

std::string CheckpointLayout::PartKey(int64_t step, int rank) const {
  return PartsPrefix(step) + RankFolder(rank) + ".json";
}

std::optional<int> CheckpointLayout::ParsePartKey(int64_t step, std::string_view key) const {
  const std::string prefix = PartsPrefix(step) + "rank-";
  constexpr std::string_view kSuffix = ".json";
  if (key.size() <= prefix.size() + kSuffix.size() || key.substr(0, prefix.size()) != prefix ||
      key.substr(key.size() - kSuffix.size()) != kSuffix) {
    return std::nullopt;
  }
  std::string_view digits = key.substr(prefix.size(), key.size() - prefix.size() - kSuffix.size());
  int rank = -1;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (error != std::errc() || end != digits.data() + digits.size() || rank < 0) return std::nullopt;
  return rank;
}

std::string CheckpointLayout::CommitterMarkerKey() const { return Child("COMMITTER"); }

std::string CheckpointLayout::LatestHintKey() const { return Child("LATEST"); }

std::string CheckpointLayout::ListPrefix() const { return root_.empty() ? std::string() : root_ + "/"; }

std::optional<int64_t> CheckpointLayout::ParseStepPrefix(std::string_view prefix) const {
  const std::string expected = ListPrefix();
  if (prefix.substr(0, expected.size()) != expected) return std::nullopt;
  prefix.remove_prefix(expected.size());
  constexpr std::string_view kStep = "step-";
  if (prefix.substr(0, kStep.size()) != kStep || prefix.size() < kStep.size() + 2 || prefix.back() != '/') {
    return std::nullopt;
  }
  std::string_view digits = prefix.substr(kStep.size(), prefix.size() - kStep.size() - 1);
  int64_t step = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (error != std::errc() || end != digits.data() + digits.size() || step < 0 || digits.size() < 12) {
    return std::nullopt;
  }
  return step;
}

}  // namespace spool::checkpoint
