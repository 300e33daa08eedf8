// The loader suite on S3: the local Ceph RGW of the ceph_rgw fixture, in a
// bucket of the loader's own (made by make_bucket.sh), opened by URL as a
// user would. Everything a run writes is deleted at the end.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <unistd.h>

#include "spool/core/storage/registry.h"
#include "spool/register_backends.h"
#include "tests/loader/loader_suite.h"

namespace spool::testing {
namespace {

const char* Bucket() {
  const char* bucket = std::getenv("SPOOL_LOADER_TEST_BUCKET");
  return bucket ? bucket : "spool-loader-test";
}

std::shared_ptr<ObjectStore> S3Store() {
  // Once: registering again would drop the registry's cached stores.
  static const bool registered = (RegisterAllBackends(), true);
  (void)registered;
  auto location = OpenLocation(std::string("s3://") + Bucket() + "/");
  EXPECT_TRUE(location.ok()) << location.status().ToString();
  return location.ok() ? location->store : nullptr;
}

const std::string& RunPrefix() {
  static const std::string prefix =
      "loader-run-" + std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  return prefix;
}

class DeleteRunObjects : public ::testing::Environment {
 public:
  void TearDown() override {
    auto store = S3Store();
    if (!store) return;
    ListOptions list;
    list.prefix = RunPrefix() + "/";
    auto page = ListAll(*store, list);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> keys;
    for (const auto& object : page->objects) keys.push_back(object.key);
    if (keys.empty()) return;
    auto failures = store->DeleteMany(keys);
    ASSERT_TRUE(failures.ok()) << failures.status().ToString();
    EXPECT_TRUE(failures->empty());
  }
};

const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new DeleteRunObjects);

INSTANTIATE_TEST_SUITE_P(Stores, LoaderSuite,
                         ::testing::Values(StoreUnderTest{
                             "s3", S3Store, [](const std::string& test) { return RunPrefix() + "/" + test; }}),
                         StoreName);

}  // namespace
}  // namespace spool::testing
