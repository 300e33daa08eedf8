#include "spool/gcs/token_cache.h"

#include <algorithm>
#include <utility>

namespace spool::gcs {
namespace {
// A token this close to expiry is not handed out: the request it authorizes
// may take that long to reach the service.
constexpr std::chrono::seconds kMinimumValidity{10};
}  // namespace

TokenCache::TokenCache(Fetch fetch, Clock clock, std::chrono::seconds refresh_margin)
    : fetch_(std::move(fetch)),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::system_clock::now(); })),
      refresh_margin_(refresh_margin) {}

Result<std::string> TokenCache::Get() {
  std::unique_lock lock(mu_);
  for (;;) {
    const auto now = clock_();
    const bool valid = cached_ && now + kMinimumValidity < cached_->token.expiry;
    if (valid && now < cached_->refresh_at) return cached_->token.value;
    if (fetching_) {
      if (valid) return cached_->token.value;  // someone is refreshing; the old token still works
      const int64_t awaited = fetches_;
      fetched_cv_.wait(lock, [&] { return !fetching_; });
      if (fetches_ != awaited && !last_error_.ok()) return last_error_;
      continue;
    }
    fetching_ = true;
    lock.unlock();
    Result<AccessToken> fetched = fetch_();
    lock.lock();
    fetching_ = false;
    ++fetches_;
    fetched_cv_.notify_all();
    if (!fetched.ok()) {
      last_error_ = fetched.status();
      if (valid) return cached_->token.value;  // try again on a later call
      return last_error_;
    }
    last_error_ = OkStatus();
    const auto fetched_at = clock_();
    const auto lifetime = fetched->expiry - fetched_at;
    const auto margin = std::min<std::chrono::system_clock::duration>(refresh_margin_, lifetime / 2);
    cached_ = Cached{std::move(*fetched), {}};
    cached_->refresh_at = cached_->token.expiry - margin;
    return cached_->token.value;
  }
}

void TokenCache::Invalidate() {
  std::lock_guard lock(mu_);
  cached_.reset();
}

int64_t TokenCache::fetch_count() const {
  std::lock_guard lock(mu_);
  return fetches_;
}

}  // namespace spool::gcs
