// The ObjectStore conformance suite on GcsStore, against the local GCS server.
#include <memory>

#include "tests/gcs/test_server.h"
#include "tests/storage/conformance.h"

namespace spool::conformance {
namespace {

StoreUnderTest OpenGcs() {
  // Small thresholds so that the suite's larger objects take the resumable
  // and parallel-read paths too.
  static std::shared_ptr<gcs::GcsStore> store = [] {
    gcs::GcsStoreOptions options;
    options.resumable_threshold = 1 << 20;
    options.chunk_size = 512 << 10;
    options.reads.part_size = 1 << 20;
    return gcs::testing::OpenStore("conformance", options);
  }();
  return {store, gcs::testing::UniqueName("case") + "/", nullptr};
}

SPOOL_INSTANTIATE_STORE_CONFORMANCE(Gcs, ConformanceTarget{.name = "gcs", .open = OpenGcs});

}  // namespace
}  // namespace spool::conformance
