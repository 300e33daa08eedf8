#include "spool/core/buffer_pool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace spool {
namespace {

TEST(BufferPoolTest, AReturnedBufferIsTakenAgainBySize) {
  BufferPool pool(8 << 20);
  char* first = nullptr;
  {
    BufferPool::Buffer buffer = pool.Take(1 << 20);
    ASSERT_TRUE(buffer);
    EXPECT_EQ(buffer.size(), 1u << 20);
    first = buffer.data();
    buffer.data()[0] = 'x';
  }
  EXPECT_EQ(pool.idle_bytes(), 1u << 20);
  BufferPool::Buffer other_size = pool.Take(2 << 20);
  EXPECT_NE(other_size.data(), first);
  BufferPool::Buffer again = pool.Take(1 << 20);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(pool.idle_bytes(), 0u);
}

TEST(BufferPoolTest, IdleBytesStayWithinTheLimitKeepingTheNewest) {
  BufferPool pool(3 << 20);
  std::vector<BufferPool::Buffer> taken;
  std::vector<char*> addresses;
  for (int i = 0; i < 5; ++i) {
    taken.push_back(pool.Take(1 << 20));
    addresses.push_back(taken.back().data());
  }
  taken.clear();  // returned in order 0..4; only 2, 3, 4 fit
  EXPECT_EQ(pool.idle_bytes(), 3u << 20);
  EXPECT_EQ(pool.Take(1 << 20).data(), addresses[4]);  // the most recent first
  BufferPool::Buffer too_big = pool.Take(4 << 20);
  too_big = BufferPool::Buffer();  // larger than the limit: freed, not kept
  EXPECT_LE(pool.idle_bytes(), 3u << 20);
}

TEST(BufferPoolTest, MovedBuffersReturnOnce) {
  BufferPool pool(8 << 20);
  BufferPool::Buffer a = pool.Take(4096);
  BufferPool::Buffer b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  BufferPool::Buffer c;
  c = std::move(b);
  EXPECT_EQ(pool.idle_bytes(), 0u);
  c = BufferPool::Buffer();
  EXPECT_EQ(pool.idle_bytes(), 4096u);
}

TEST(BufferPoolTest, ThreadsTakeAndReturnConcurrently) {
  BufferPool pool(1 << 20);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 2000; ++i) {
        BufferPool::Buffer buffer = pool.Take(4096 * (1 + (i + t) % 3));
        buffer.data()[0] = static_cast<char>(i);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(pool.idle_bytes(), 1u << 20);
}

TEST(BufferPoolTest, AForkedChildUsesItsOwnDefaultPool) {
  BufferPool& parent = DefaultBufferPool();
  BufferPool::Buffer held = parent.Take(64 << 10);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The parent's buffer is freed here, not returned to the parent's pool.
    const uint64_t parent_idle = parent.idle_bytes();
    held = BufferPool::Buffer();
    const bool own = &DefaultBufferPool() != &parent && parent.idle_bytes() == parent_idle;
    BufferPool::Buffer mine = DefaultBufferPool().Take(4096);
    _exit(own && mine ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace spool
