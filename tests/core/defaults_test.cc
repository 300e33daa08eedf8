// DefaultExecutor and DefaultByteBudget read SPOOL_THREADS and
// SPOOL_MEMORY_BUDGET once, on first use; this binary sets them first.
#include <gtest/gtest.h>

#include <cstdlib>

#include "spool/core/bytes.h"
#include "spool/core/executor.h"

namespace spool {
namespace {

TEST(DefaultsTest, EnvironmentSizesThePoolAndTheBudget) {
  ASSERT_EQ(setenv("SPOOL_THREADS", "3", 1), 0);
  ASSERT_EQ(setenv("SPOOL_MEMORY_BUDGET", "1.5MiB", 1), 0);
  EXPECT_EQ(DefaultExecutor().threads(), 3);
  EXPECT_EQ(DefaultByteBudget().capacity(), 3 * kMiB / 2);
  // Read once: later changes do not resize anything.
  ASSERT_EQ(setenv("SPOOL_THREADS", "5", 1), 0);
  EXPECT_EQ(DefaultExecutor().threads(), 3);
}

}  // namespace
}  // namespace spool
