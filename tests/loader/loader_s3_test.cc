// The loader suite on S3: the local Ceph RGW of the ceph_rgw fixture, in a
// bucket of the loader's own (made by make_bucket.sh), opened by URL as a
// user would. Everything a run writes is deleted at the end.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "spool/core/storage/registry.h"
#include "spool/records/loader/data_loader.h"
#include "spool/register_backends.h"
#include "tests/loader/loader_suite.h"
#include "tests/loader/test_dataset.h"

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

// A manifest gives each shard's size and CRC32C, so a small shard is read
// with one GET and no HEAD: on a prefix the server throttles, a HEAD per
// shard halved the GETs the loader could make (docs/performance.md). Every
// record still comes, each once; the HEADs left are the manifest's.
TEST(LoaderOnS3, ManifestShardsAreReadWithoutAHeadEach) {
  auto store = S3Store();
  ASSERT_NE(store, nullptr);
  DatasetSpec spec{RunPrefix() + "/no-heads", {5, 7, 3, 6, 4, 5, 8, 2}};
  spec.write_manifest = true;
  auto dataset = WriteDataset(*store, spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  loader::DataLoaderOptions options;
  options.inputs = {std::string("s3://") + Bucket() + "/" + dataset->manifest_key};
  options.batch_size = 4;
  options.seed = 3;
  auto loader = loader::DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  std::vector<std::string> records;
  ASSERT_TRUE(Drain(**loader, &records).ok());
  std::sort(records.begin(), records.end());
  std::vector<std::string> expected = dataset->records;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(records, expected);
  const RequestCounts requests = (*loader)->Requests();
  EXPECT_LE(requests.op(RequestOp::kHead).requests, 1u) << "the manifest's HEAD, and none per shard";
  EXPECT_GE(requests.op(RequestOp::kGet).requests + requests.op(RequestOp::kRangedGet).requests,
            spec.shard_records.size());
}

INSTANTIATE_TEST_SUITE_P(Stores, LoaderSuite,
                         ::testing::Values(StoreUnderTest{
                             "s3", S3Store, [](const std::string& test) { return RunPrefix() + "/" + test; }}),
                         StoreName);

}  // namespace
}  // namespace spool::testing
