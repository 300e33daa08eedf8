// The round-trip property on the memory and local stores.
#include <gtest/gtest.h>

#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "tests/records/round_trip.h"

namespace spool::records {
namespace {

TEST(RoundTripTest, RandomRecordsOnTheMemoryStore) {
  MemoryStore store("records-round-trip");
  for (uint64_t seed = 1; seed <= 4; ++seed) testing::RoundTrip(store, "rt/", seed, 6);
}

TEST(RoundTripTest, RandomRecordsOnLocalFiles) {
  testing::TempDir dir;
  LocalStore store;
  testing::RoundTrip(store, dir.Key("rt") + "/", 101, 8);
}

}  // namespace
}  // namespace spool::records
