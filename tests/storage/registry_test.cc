// OpenLocation: schemes, the store cache and unregistered backends.
#include "spool/core/storage/registry.h"

#include <gtest/gtest.h>

#include "spool/core/storage/memory_store.h"

namespace spool {
namespace {

TEST(RegistryTest, BuiltInSchemes) {
  Result<StoreLocation> mem = OpenLocation("mem://reg-bucket/some/key");
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  EXPECT_EQ(mem->key, "some/key");
  EXPECT_EQ(mem->url.bucket, "reg-bucket");
  EXPECT_EQ(mem->store->Describe(mem->key), "mem://reg-bucket/some/key");

  Result<StoreLocation> file = OpenLocation("file:///tmp/x/y");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->key, "tmp/x/y");
  EXPECT_EQ(file->store->Describe(file->key), "/tmp/x/y");

  Result<StoreLocation> plain = OpenLocation("/tmp/x/z");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->store, file->store) << "one local store serves every path";
}

TEST(RegistryTest, CachesStoresPerBucketAndOptions) {
  Result<StoreLocation> a1 = OpenLocation("mem://cache-a/k1");
  Result<StoreLocation> a2 = OpenLocation("mem://cache-a/k2");
  Result<StoreLocation> b = OpenLocation("mem://cache-b/k1");
  StoreOptions other_options;
  other_options.region = "eu-west-1";
  Result<StoreLocation> a3 = OpenLocation("mem://cache-a/k1", other_options);
  ASSERT_TRUE(a1.ok() && a2.ok() && b.ok() && a3.ok());
  EXPECT_EQ(a1->store, a2->store);
  EXPECT_NE(a1->store, b->store);
  EXPECT_NE(a1->store, a3->store);
}

TEST(RegistryTest, UnregisteredBackendSaysHowToAddIt) {
  Result<StoreLocation> location = OpenLocation("gs://not-registered-bucket/key");
  ASSERT_FALSE(location.ok());
  EXPECT_EQ(location.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(location.status().message().find("gs://not-registered-bucket/key"), std::string::npos)
      << location.status().message();
  EXPECT_NE(location.status().message().find("RegisterAllBackends"), std::string::npos);
}

TEST(RegistryTest, MalformedUrlIsInvalidArgument) {
  EXPECT_EQ(OpenLocation("s3:///key").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenLocation("ftp://host/x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenLocation("").status().code(), StatusCode::kInvalidArgument);
}

TEST(RegistryTest, RegisteredFactoryServesItsSchemeAndReplacingItDropsTheCache) {
  int calls = 0;
  RegisterStoreFactory("s3", [&calls](const Url& url, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
    ++calls;
    EXPECT_EQ(options.endpoint_url, "http://127.0.0.1:1");
    return std::shared_ptr<ObjectStore>(std::make_shared<MemoryStore>("fake-s3-" + url.bucket));
  });
  StoreOptions options;
  options.endpoint_url = "http://127.0.0.1:1";
  Result<StoreLocation> first = OpenLocation("s3://my-bucket/a/b", options);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->key, "a/b");
  EXPECT_EQ(first->store->Describe("k"), "mem://fake-s3-my-bucket/k");
  ASSERT_TRUE(OpenLocation("s3://my-bucket/c", options).ok());
  EXPECT_EQ(calls, 1);

  RegisterStoreFactory("s3", [](const Url&, const StoreOptions&) -> Result<std::shared_ptr<ObjectStore>> {
    return UnavailableError("factory replaced");
  });
  EXPECT_EQ(OpenLocation("s3://my-bucket/a/b", options).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace spool
