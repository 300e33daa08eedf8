// The ObjectStore conformance suite: one set of GoogleTest cases that every
// backend (memory, local files, S3, GCS) must pass.
//
// A backend's test binary links spool_conformance and instantiates the
// suite once with a target describing how to open a fresh store:
//
//   SPOOL_INSTANTIATE_STORE_CONFORMANCE(Memory, spool::conformance::ConformanceTarget{
//       .name = "memory",
//       .open = [] { return spool::conformance::StoreUnderTest{store, "unique/prefix/"}; }});
//
// Every case writes only under the prefix it was given and deletes what it
// wrote in TearDown, so targets may share one bucket.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/storage/object_store.h"

namespace spool::conformance {

// A store to test and a key prefix (ending in '/') that no other case uses.
struct StoreUnderTest {
  std::shared_ptr<ObjectStore> store;
  std::string prefix;
  // Run after the case's keys were deleted (e.g. to remove a temp folder).
  std::function<void()> cleanup;
};

// What ReadAt of an open handle does after its object was replaced.
enum class ReplacedObjectRead {
  kFailedPrecondition,  // memory (version counter), S3 (ETag), GCS (generation)
  kOldContent,          // local files: the open handle keeps the old inode
};

struct ConformanceTarget {
  std::string name;                    // letters, digits and '_': the test name suffix
  std::function<StoreUnderTest()> open;  // called once per case
  // False when the store cannot create conditionally: such a write must then
  // fail with Unimplemented (at OpenWrite or Close).
  bool supports_if_not_exists = true;
  ReplacedObjectRead replaced_object_read = ReplacedObjectRead::kFailedPrecondition;
};

void PrintTo(const ConformanceTarget& target, std::ostream* out);

class ObjectStoreConformance : public ::testing::TestWithParam<ConformanceTarget> {
 protected:
  void SetUp() override;
  void TearDown() override;  // deletes every key under the prefix, then cleanup

  ObjectStore& store() { return *under_test_.store; }
  std::string Key(std::string_view name) const { return under_test_.prefix + std::string(name); }

  StoreUnderTest under_test_;
};

// Returns `targets`. Defined next to the cases, so that instantiating the
// suite through it links them into the test binary.
std::vector<ConformanceTarget> Targets(std::vector<ConformanceTarget> targets);
std::string TargetName(const ::testing::TestParamInfo<ConformanceTarget>& info);

}  // namespace spool::conformance

// GoogleTest names suites by a plain identifier, so the macro below needs
// the fixture reachable as `ObjectStoreConformance` from any namespace.
using ObjectStoreConformance = ::spool::conformance::ObjectStoreConformance;

// Runs every conformance case against the given targets (one or more
// ConformanceTarget values). Use it at namespace scope.
#define SPOOL_INSTANTIATE_STORE_CONFORMANCE(instance_name, ...)                                   \
  INSTANTIATE_TEST_SUITE_P(instance_name, ObjectStoreConformance,                                 \
                           ::testing::ValuesIn(::spool::conformance::Targets({__VA_ARGS__})), \
                           ::spool::conformance::TargetName)
