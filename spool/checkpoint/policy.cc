#include "spool/checkpoint/policy.h"

#include <algorithm>

namespace spool::checkpoint {

bool ShouldSaveStep(const SavePolicy& policy, int64_t step, std::optional<int64_t> last_saved_step,
                    std::chrono::steady_clock::time_point last_save_time, std::chrono::steady_clock::time_point now) {
  if (step <= 0) return false;  // nothing trained yet: a restart recreates step 0 without a checkpoint
  if (last_saved_step && step == *last_saved_step) return false;
  if (policy.every_n_steps > 0) {
    if (step % policy.every_n_steps == 0) return true;
    if (last_saved_step && step - *last_saved_step >= policy.every_n_steps) return true;
  }
  if (policy.every_duration.count() > 0 && now - last_save_time >= policy.every_duration) return true;
  return false;
}

std::vector<int64_t> StepsToDelete(const RetentionPolicy& policy, std::vector<RetentionCandidate> committed) {
  if (policy.keep_last <= 0 || committed.size() <= static_cast<size_t>(policy.keep_last)) return {};
  std::sort(committed.begin(), committed.end(),
            [](const RetentionCandidate& a, const RetentionCandidate& b) { return a.step < b.step; });
  const size_t newest_kept_from = committed.size() - static_cast<size_t>(policy.keep_last);
  std::optional<std::chrono::system_clock::time_point> last_time_preserved;
  std::optional<int64_t> last_step_preserved;
  std::vector<int64_t> doomed;
  for (size_t i = 0; i < committed.size(); ++i) {
    const RetentionCandidate& c = committed[i];
    bool preserved = false;
    if (policy.keep_every_duration.count() > 0 &&
        (!last_time_preserved || c.wall_time - *last_time_preserved >= policy.keep_every_duration)) {
      last_time_preserved = c.wall_time;
      preserved = true;
    }
    if (policy.keep_every_n_steps > 0 &&
        (!last_step_preserved || c.step - *last_step_preserved >= policy.keep_every_n_steps)) {
      last_step_preserved = c.step;
      preserved = true;
    }
    if (!preserved && i < newest_kept_from) doomed.push_back(c.step);
  }
  return doomed;
}

}  // namespace spool::checkpoint
