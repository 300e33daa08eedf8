#include "spool/gcs/token_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <thread>
#include <vector>

namespace spool::gcs {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::system_clock;

struct FakeClock {
  Clock::time_point now = Clock::time_point(std::chrono::hours(24 * 365 * 50));
  TokenCache::Clock fn() {
    return [this] { return now; };
  }
};

TEST(TokenCache, FetchesOnceWhileFreshThenRefreshesBeforeExpiry) {
  FakeClock clock;
  int fetches = 0;
  TokenCache cache(
      [&]() -> Result<AccessToken> {
        ++fetches;
        std::string value = "token-";
        value += std::to_string(fetches);
        return AccessToken{value, clock.now + seconds(3600)};
      },
      clock.fn(), seconds(300));
  EXPECT_EQ(*cache.Get(), "token-1");
  clock.now += seconds(3000);  // 10 minutes left: still fresh
  EXPECT_EQ(*cache.Get(), "token-1");
  clock.now += seconds(301);  // inside the 5-minute margin: refreshed, not yet expired
  EXPECT_EQ(*cache.Get(), "token-2");
  EXPECT_EQ(fetches, 2);
  EXPECT_EQ(cache.fetch_count(), 2);
}

TEST(TokenCache, ShortLivedTokensRefreshAtHalfTheirLifetime) {
  FakeClock clock;
  int fetches = 0;
  TokenCache cache(
      [&]() -> Result<AccessToken> {
        ++fetches;
        std::string value = "t";
        value += std::to_string(fetches);
        return AccessToken{value, clock.now + seconds(120)};
      },
      clock.fn(), seconds(300));
  EXPECT_EQ(*cache.Get(), "t1");
  clock.now += seconds(59);
  EXPECT_EQ(*cache.Get(), "t1");
  clock.now += seconds(2);
  EXPECT_EQ(*cache.Get(), "t2");
}

TEST(TokenCache, AFailedRefreshKeepsTheStillValidTokenAndAnExpiredOneReportsTheError) {
  FakeClock clock;
  bool fail = false;
  TokenCache cache(
      [&]() -> Result<AccessToken> {
        if (fail) return UnavailableError("token endpoint down");
        return AccessToken{"good", clock.now + seconds(3600)};
      },
      clock.fn(), seconds(300));
  EXPECT_EQ(*cache.Get(), "good");
  fail = true;
  clock.now += seconds(3400);  // refresh due, fetch fails, old token still valid
  EXPECT_EQ(*cache.Get(), "good");
  clock.now += seconds(300);  // expired
  auto token = cache.Get();
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kUnavailable);
  fail = false;
  EXPECT_EQ(*cache.Get(), "good");  // recovers on the next call
}

TEST(TokenCache, InvalidateForcesAFetch) {
  int fetches = 0;
  TokenCache cache([&]() -> Result<AccessToken> {
    ++fetches;
    return AccessToken{"t", Clock::now() + seconds(3600)};
  });
  ASSERT_TRUE(cache.Get().ok());
  ASSERT_TRUE(cache.Get().ok());
  cache.Invalidate();
  ASSERT_TRUE(cache.Get().ok());
  EXPECT_EQ(fetches, 2);
}

TEST(TokenCache, ManyThreadsWithoutATokenShareOneFetch) {
  constexpr int kThreads = 16;
  std::atomic<int> fetches{0};
  std::latch release(1);
  std::atomic<bool> fetch_started{false};
  TokenCache cache([&]() -> Result<AccessToken> {
    ++fetches;
    fetch_started = true;
    release.wait();  // hold the fetch until every thread is waiting or has asked
    return AccessToken{"shared", Clock::now() + seconds(3600)};
  });
  std::latch asked(kThreads);
  std::vector<std::thread> threads;
  std::vector<std::string> tokens(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      asked.count_down();
      auto token = cache.Get();
      tokens[i] = token.ok() ? *token : token.status().ToString();
    });
  }
  asked.wait();
  while (!fetch_started) std::this_thread::yield();
  release.count_down();
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(fetches.load(), 1);
  for (const auto& token : tokens) EXPECT_EQ(token, "shared");
}

TEST(TokenCache, WaitersOfAFailedFetchGetItsErrorWithoutFetchingAgain) {
  constexpr int kThreads = 8;
  std::atomic<int> fetches{0};
  std::latch release(1);
  std::atomic<bool> fetch_started{false};
  TokenCache cache([&]() -> Result<AccessToken> {
    ++fetches;
    fetch_started = true;
    release.wait();
    return UnauthenticatedError("invalid_grant");
  });
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::latch asked(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      asked.count_down();
      if (!cache.Get().ok()) ++failures;
    });
  }
  asked.wait();
  while (!fetch_started) std::this_thread::yield();
  release.count_down();
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), kThreads);
  // Threads that arrived after the fetch had finished may have tried again;
  // those that waited for it did not.
  EXPECT_LE(fetches.load(), kThreads);
  EXPECT_GE(fetches.load(), 1);
}

}  // namespace
}  // namespace spool::gcs
