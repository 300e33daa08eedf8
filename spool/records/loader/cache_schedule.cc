#include "spool/records/loader/cache_schedule.h"

#include <algorithm>

#include "spool/records/loader/plan.h"

namespace spool::loader {

CacheSchedule::CacheSchedule(Config config) : config_(std::move(config)) {}

std::shared_ptr<const std::vector<uint32_t>> CacheSchedule::Plan(uint64_t worker, uint64_t epoch) const {
  std::lock_guard lock(mu_);
  auto key = std::make_pair(epoch, worker);
  if (auto found = plans_.find(key); found != plans_.end()) return found->second;
  auto shards = std::make_shared<std::vector<uint32_t>>();
  if (config_.epochs == 0 || epoch < config_.epochs) {
    Result<std::vector<Segment>> plan =
        PlanWorkerEpoch(config_.counts, config_.seed, epoch, config_.shuffle_shards, worker, config_.workers);
    if (plan.ok()) {
      for (const Segment& segment : *plan) shards->push_back(segment.shard);
    }
  }
  // Keep the epochs around the newest asked for (two are ever looked at).
  while (!plans_.empty() && plans_.begin()->first.first + 2 < epoch) plans_.erase(plans_.begin());
  plans_.emplace(key, shards);
  return shards;
}

std::optional<uint64_t> CacheSchedule::Position(uint64_t worker, uint64_t epoch, uint32_t shard) const {
  auto plan = Plan(worker, epoch);
  auto found = std::find(plan->begin(), plan->end(), shard);
  if (found == plan->end()) return std::nullopt;
  return static_cast<uint64_t>(found - plan->begin());
}

uint64_t CacheSchedule::NextUse(uint32_t shard, uint64_t epoch, uint64_t worker, uint64_t position,
                                uint64_t from_position) const {
  // The next epoch starts, for everyone, when the requesting worker's plan
  // of this epoch ends.
  const uint64_t this_epoch_left =
      Plan(worker, epoch)->size() - std::min<uint64_t>(position, Plan(worker, epoch)->size());
  uint64_t best = kNever;
  for (uint64_t w : config_.node_workers) {
    auto now = Plan(w, epoch);
    for (uint64_t j = from_position; j < now->size(); ++j) {
      if ((*now)[j] == shard) {
        best = std::min(best, j - std::min(j, position));
        break;
      }
    }
    auto next = Plan(w, epoch + 1);
    for (uint64_t j = 0; j < next->size(); ++j) {
      if ((*next)[j] == shard) {
        best = std::min(best, this_epoch_left + j);
        break;
      }
    }
  }
  return best;
}

std::vector<CacheSchedule::Use> CacheSchedule::Upcoming(uint64_t worker, uint64_t epoch, uint64_t position,
                                                        size_t count) const {
  std::vector<Use> uses;
  for (uint64_t e = epoch; e <= epoch + 1 && uses.size() < count; ++e) {
    auto plan = Plan(worker, e);
    for (uint64_t j = e == epoch ? position + 1 : 0; j < plan->size() && uses.size() < count; ++j) {
      uses.push_back(Use{(*plan)[j], e, j});
    }
  }
  return uses;
}

}  // namespace spool::loader
