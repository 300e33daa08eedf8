// PacingBlock: where a RetryThrottle (throttle.h) keeps its send-rate limit
// and the measurement of the rate it sends at. Either memory of the process
// alone, or a small file under /dev/shm that every process of the host
// maps for the same store, so that a host's processes pace as one: the
// first throttle any of them gets cuts the rate all of them send at, a
// burst of throttles across them counts once, and growth back probes the
// prefix once for the host instead of once per process. A training node's
// ranks and DataLoader workers are such processes (8 ranks x 8 workers: one
// limiter per node instead of 64); hosts stay independent of each other.
//
// The file: `<dir>/spool-pacing-v1-<uid>-<crc32c of the key, hex>`, 4 KiB,
// mode 0600, made whole in a temporary file and published with link(2), so
// a process sees it complete or not at all. It is mapped only when it is a
// regular file of this user, private to it, of the expected size, and names
// the same key; otherwise (another user's file, a crc32c collision, no
// /dev/shm) the throttle paces its process alone and says why at debug
// level. Every process using the file holds a shared flock(2) on it and the
// last one to let go removes it, so a job's file goes with the job. One
// killed (SIGKILL, a default SIGTERM) leaves it; the next process that
// makes a pacing file removes this user's files that no process uses.
// Opening never blocks: the file is checked before it is locked, and a lock
// not had at once is tried again a few times, then given up. A process
// that dies while holding the mutex leaves it to the next (a robust
// mutex); one stopped while holding it (SIGSTOP, a debugger) holds up the
// host's other users of the store until it runs again.
//
// Times are steady_clock nanoseconds: CLOCK_MONOTONIC, one clock for the
// whole host.
//
// Thread-safe and process-safe through a Guard, held briefly, never across
// a wait. Lifetime: owned by one RetryThrottle; a forked child shares
// a host block with its parent and gets a copy of a private one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace spool {

// What the rate limit knows. Plain numbers only: it may live in a file
// mapped by processes of different builds of the same layout version.
struct PacingState {
  double rate = 0;  // requests per second; 0: never throttled, not paced
  int64_t last_send_ns = 0;
  // CUBIC's W_max (growth returns to it) and the rate the last cut was
  // measured from (fast convergence); when that cut was.
  double w_max = 0;
  double last_cut_rate = 0;
  int64_t last_cut_ns = 0;
  // Sends over windows of about a second, and those of them that succeeded.
  int64_t window_start_ns = 0;
  uint64_t window_sends = 0;
  uint64_t window_successes = 0;
  uint64_t last_window_sends = 0;
  uint64_t last_window_successes = 0;
  double measured_rate = 0;
};

class PacingBlock {
 public:
  // The directory host blocks live in unless a test gives another.
  static constexpr const char* kHostDir = "/dev/shm";

  // State of this process alone.
  static std::unique_ptr<PacingBlock> Private();
  // State shared with the host's processes that use `key` (the store and
  // its endpoint); nullptr when it cannot be (`why_not` says why).
  // `<dir>/spool-pacing-v1-...`: PathFor names it.
  static std::string PathFor(const std::string& key, const std::string& dir);
  static std::unique_ptr<PacingBlock> OnHost(const std::string& key, const std::string& dir, std::string* why_not);

  ~PacingBlock();
  PacingBlock(const PacingBlock&) = delete;
  PacingBlock& operator=(const PacingBlock&) = delete;

  bool on_host() const { return fd_ >= 0; }

  // The state, locked while the Guard lives.
  class Guard {
   public:
    explicit Guard(PacingBlock& block);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    PacingState& state() { return *state_; }

   private:
    PacingBlock& block_;
    PacingState* state_;
    bool held_ = false;
  };

  struct Layout;  // pacing_block.cc

 private:
  PacingBlock(Layout* layout, int fd, std::string path);

  Layout* layout_;
  // The host's file (-1, "": private), held open with a shared flock.
  const int fd_;
  const std::string path_;
};

}  // namespace spool
