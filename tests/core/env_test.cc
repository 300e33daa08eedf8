// spool::Env: the process environment, fixed sets of variables, and the
// scoped override components see through CurrentEnv(). ctest sets
// SPOOL_ENV_TEST_VALUE=from-ctest and SPOOL_ENV_TEST_EMPTY= (empty) for this
// binary, so nothing here changes the process environment.
#include "spool/core/env.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

namespace spool {
namespace {

TEST(EnvTest, ProcessEnvironmentReadsWhatTheProcessWasGiven) {
  const Env process;
  EXPECT_TRUE(process.is_process());
  EXPECT_EQ(process.Get("SPOOL_ENV_TEST_VALUE"), "from-ctest");
  EXPECT_EQ(process.GetEvenIfEmpty("SPOOL_ENV_TEST_VALUE"), "from-ctest");
  // Set but empty: unset for Get, the empty string for GetEvenIfEmpty.
  EXPECT_EQ(process.Get("SPOOL_ENV_TEST_EMPTY"), std::nullopt);
  EXPECT_EQ(process.GetEvenIfEmpty("SPOOL_ENV_TEST_EMPTY"), "");
  EXPECT_EQ(process.Get("SPOOL_ENV_TEST_NEVER_SET"), std::nullopt);
  EXPECT_EQ(process.GetEvenIfEmpty("SPOOL_ENV_TEST_NEVER_SET"), std::nullopt);
}

TEST(EnvTest, FixedEnvironmentHasExactlyItsVariables) {
  const Env fixed = Env::Fixed({{"A", "1"}, {"EMPTY", ""}});
  EXPECT_FALSE(fixed.is_process());
  EXPECT_EQ(fixed.Get("A"), "1");
  EXPECT_EQ(fixed.Get("EMPTY"), std::nullopt);
  EXPECT_EQ(fixed.GetEvenIfEmpty("EMPTY"), "");
  EXPECT_EQ(fixed.GetEvenIfEmpty("B"), std::nullopt);
  // Nothing of the process environment shows through.
  EXPECT_EQ(fixed.Get("SPOOL_ENV_TEST_VALUE"), std::nullopt);
  EXPECT_EQ(fixed.Get("PATH"), std::nullopt);
}

TEST(EnvTest, CurrentEnvIsTheProcessUnlessOverriddenAndOverridesNest) {
  EXPECT_TRUE(CurrentEnv().is_process());
  {
    ScopedEnvOverride outer(Env::Fixed({{"LEVEL", "outer"}}));
    EXPECT_EQ(CurrentEnv().Get("LEVEL"), "outer");
    EXPECT_EQ(CurrentEnv().Get("SPOOL_ENV_TEST_VALUE"), std::nullopt);
    {
      ScopedEnvOverride inner(Env::Fixed({{"LEVEL", "inner"}}));
      EXPECT_EQ(CurrentEnv().Get("LEVEL"), "inner");
    }
    EXPECT_EQ(CurrentEnv().Get("LEVEL"), "outer");
  }
  EXPECT_TRUE(CurrentEnv().is_process());
  EXPECT_EQ(CurrentEnv().Get("SPOOL_ENV_TEST_VALUE"), "from-ctest");
}

TEST(EnvTest, AnOverrideIsSeenByEveryThread) {
  ScopedEnvOverride scope(Env::Fixed({{"SEEN", "yes"}}));
  std::optional<std::string> seen;
  std::thread reader([&] { seen = CurrentEnv().Get("SEEN"); });
  reader.join();
  EXPECT_EQ(seen, "yes");
}

TEST(EnvTest, AnEnvKeptOutlivesTheOverrideThatMadeIt) {
  Env kept;
  {
    ScopedEnvOverride scope(Env::Fixed({{"KEPT", "still here"}}));
    kept = CurrentEnv();
  }
  EXPECT_EQ(kept.Get("KEPT"), "still here");
  EXPECT_EQ(CurrentEnv().Get("KEPT"), std::nullopt);
}

}  // namespace
}  // namespace spool
