// DefaultExecutor and DefaultByteBudget read SPOOL_THREADS and
// SPOOL_MEMORY_BUDGET once, on first use; this binary sets them first.
#include <gtest/gtest.h>

#include "spool/core/bytes.h"
#include "spool/core/env.h"
#include "spool/core/executor.h"

namespace spool {
namespace {

TEST(DefaultsTest, EnvironmentSizesThePoolAndTheBudget) {
  {
    ScopedEnvOverride sized(Env::Fixed({{"SPOOL_THREADS", "3"}, {"SPOOL_MEMORY_BUDGET", "1.5MiB"}}));
    EXPECT_EQ(DefaultExecutor().threads(), 3);
    EXPECT_EQ(DefaultByteBudget().capacity(), 3 * kMiB / 2);
  }
  // Read once: later changes do not resize anything.
  ScopedEnvOverride resized(Env::Fixed({{"SPOOL_THREADS", "5"}}));
  EXPECT_EQ(DefaultExecutor().threads(), 3);
}

}  // namespace
}  // namespace spool
