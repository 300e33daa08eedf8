// When to save and which checkpoints to keep. Pure logic, no I/O, so the
// rules can be tested without a store.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace spool::checkpoint {

// Save every N steps and/or every T seconds; either rule alone suffices. Both
// zero: ShouldSave is always false (the caller decides).
struct SavePolicy {
  int64_t every_n_steps = 0;
  std::chrono::seconds every_duration{0};
};

// True when `step` is due: a multiple of every_n_steps, or every_n_steps or
// more past the last save (so loops that skip steps still save); or
// every_duration elapsed since the last save (or since start when none).
// A step counts the training steps done, so step 0 (nothing trained yet:
// what a restart recreates without a checkpoint) is never due; nor is the
// step last saved.
bool ShouldSaveStep(const SavePolicy& policy, int64_t step, std::optional<int64_t> last_saved_step,
                    std::chrono::steady_clock::time_point last_save_time, std::chrono::steady_clock::time_point now);

// Which committed checkpoints to keep, as TensorFlow's Saver does with
// max_to_keep and keep_checkpoint_every_n_hours: the newest keep_last, plus
// a checkpoint each keep_every_duration of wall time and/or each
// keep_every_n_steps steps. Walking from the oldest, a checkpoint is
// preserved when it is the oldest, or at least that long / that many steps
// after the previously preserved one; preserved checkpoints stay forever
// (until Prune). The decision for a checkpoint never changes as newer ones
// arrive. keep_last 0 means keep everything.
struct RetentionPolicy {
  int keep_last = 0;
  std::chrono::seconds keep_every_duration{0};
  int64_t keep_every_n_steps = 0;
};

struct RetentionCandidate {
  int64_t step = 0;
  std::chrono::system_clock::time_point wall_time{};
};

// The steps to delete, given every committed checkpoint (any order).
std::vector<int64_t> StepsToDelete(const RetentionPolicy& policy, std::vector<RetentionCandidate> committed);

}  // namespace spool::checkpoint
