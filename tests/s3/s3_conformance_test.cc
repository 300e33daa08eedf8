// The ObjectStore conformance suite on S3Store against the local Ceph RGW.
#include "tests/s3/s3_test_store.h"
#include "tests/storage/conformance.h"

namespace spool::conformance {
namespace {

StoreUnderTest OpenS3() {
  static std::shared_ptr<s3::S3Store> store = s3::testing::OpenTestStore();
  return {store, s3::testing::UniquePrefix("conformance"), nullptr};
}

// Ceph RGW honours If-None-Match: * on a single PUT, which is what the
// suite's small create-only objects use.
SPOOL_INSTANTIATE_STORE_CONFORMANCE(S3, ConformanceTarget{.name = "s3_ceph_rgw", .open = OpenS3});

}  // namespace
}  // namespace spool::conformance
