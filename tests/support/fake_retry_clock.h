// A fake clock for the retry loop (spool/core/retry.h): time moves only when
// the loop sleeps, so a test of backoff runs instantly and sees every delay.
// Shared by the retry, throttle and retry-bounds tests.
//
// Threading: the environment's functions may be called from any thread (a
// store retries on its executor); read the fields once the calls under test
// have returned. Lifetime: the clock outlives every environment it made.
#pragma once

#include <chrono>
#include <mutex>
#include <vector>

#include "spool/core/retry.h"

namespace spool::test_support {

struct FakeRetryClock {
  std::chrono::steady_clock::time_point now{};
  std::vector<std::chrono::milliseconds> sleeps;  // each backoff, in order
  std::chrono::milliseconds slept{0};             // their sum
  std::vector<int> retried_attempts;              // the attempt each retry followed
  double uniform01 = 0.5;                         // the jitter's "random" draw

  RetryEnvironment Environment() {
    RetryEnvironment env;
    env.now = [this] {
      std::lock_guard lock(mu_);
      return now;
    };
    env.sleep = [this](std::chrono::milliseconds delay) {
      std::lock_guard lock(mu_);
      sleeps.push_back(delay);
      slept += delay;
      now += delay;
    };
    env.uniform01 = [this] {
      std::lock_guard lock(mu_);
      return uniform01;
    };
    env.on_retry = [this](const Status&, int attempt, std::chrono::milliseconds) {
      std::lock_guard lock(mu_);
      retried_attempts.push_back(attempt);
    };
    return env;
  }

 private:
  std::mutex mu_;
};

}  // namespace spool::test_support
