// Caches an OAuth2 access token and refreshes it before it expires.
//
// Get() returns the cached token while it is fresh. Once it is within the
// refresh margin of expiry, one caller fetches a new token while the others
// keep using the old one (still valid); only when no valid token is left do
// callers wait, and then for the one fetch in progress: never a stampede of
// fetches. A failed fetch is reported to the callers that waited for it;
// the next Get() tries again. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "spool/core/status.h"

namespace spool::gcs {

struct AccessToken {
  std::string value;
  std::chrono::system_clock::time_point expiry;
};

class TokenCache {
 public:
  using Fetch = std::function<Result<AccessToken>()>;
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  // `fetch` obtains a new token (it is called without the cache's lock
  // held); `refresh_margin` is how long before expiry a refresh starts
  // (capped at half the token's lifetime).
  explicit TokenCache(Fetch fetch, Clock clock = {},
                      std::chrono::seconds refresh_margin = std::chrono::seconds(300));

  Result<std::string> Get();
  // Forgets the cached token (e.g. after the service rejected it).
  void Invalidate();
  // How many fetches were made: for tests and the debug log.
  int64_t fetch_count() const;

 private:
  struct Cached {
    AccessToken token;
    std::chrono::system_clock::time_point refresh_at;
  };

  Fetch fetch_;
  Clock clock_;
  std::chrono::seconds refresh_margin_;
  mutable std::mutex mu_;
  std::condition_variable fetched_cv_;
  std::optional<Cached> cached_;
  bool fetching_ = false;
  int64_t fetches_ = 0;
  Status last_error_;
};

}  // namespace spool::gcs
