// The ObjectStore conformance suite on S3Store against the fixture's server:
// the local Ceph RGW, or moto (SPOOL_S3_TEST_SERVER names it, and the case
// names end in it: .../s3_ceph_rgw, .../s3_moto).
#include "tests/s3/s3_test_store.h"
#include "tests/storage/conformance.h"

namespace spool::conformance {
namespace {

StoreUnderTest OpenS3() {
  static std::shared_ptr<s3::S3Store> store = s3::testing::OpenTestStore();
  return {store, s3::testing::UniquePrefix("conformance"), nullptr};
}

// Ceph RGW and moto both honour If-None-Match: * on a single PUT, which is
// what the suite's small create-only objects use.
SPOOL_INSTANTIATE_STORE_CONFORMANCE(S3, ConformanceTarget{.name = "s3_" + s3::testing::TestServer(), .open = OpenS3});

}  // namespace
}  // namespace spool::conformance
