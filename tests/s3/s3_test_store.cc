#include "tests/s3/s3_test_store.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "tests/support/env.h"
#include "tests/support/servers.h"

namespace spool::s3::testing {

std::string TestBucket() {
  return test_support::S3TestBucket("spool-test");
}

std::string TestServer() {
  return test_support::GetEnv("SPOOL_S3_TEST_SERVER", "ceph_rgw");
}

std::shared_ptr<S3Store> OpenTestStore(const S3Options& options) {
  auto store = S3Store::Open(TestBucket(), options);
  if (!store.ok()) {
    std::fprintf(stderr, "cannot open the test bucket: %s\n", store.status().ToString().c_str());
    std::abort();
  }
  return *store;
}

std::string UniquePrefix(const std::string& name) {
  static std::atomic<int> counter{0};
  return name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "/";
}

}  // namespace spool::s3::testing
