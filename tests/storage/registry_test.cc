// OpenLocation: schemes, the store cache (keyed by value, holding stores
// only while they are used), settings, counters and unregistered backends.
#include "spool/core/storage/registry.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>

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
  other_options.endpoint_url = "http://127.0.0.1:2";
  Result<StoreLocation> a3 = OpenLocation("mem://cache-a/k1", other_options);
  ASSERT_TRUE(a1.ok() && a2.ok() && b.ok() && a3.ok());
  EXPECT_EQ(a1->store, a2->store);
  EXPECT_NE(a1->store, b->store);
  EXPECT_NE(a1->store, a3->store);
}

// A store's connections belong to the process that opened it: a child made
// by fork() (a torch DataLoader worker) must open its own.
TEST(RegistryTest, AForkedChildNeverGetsItsParentsStore) {
  Result<StoreLocation> parent = OpenLocation("file:///tmp/fork-test/a");
  ASSERT_TRUE(parent.ok());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);
    Result<StoreLocation> mine = OpenLocation("file:///tmp/fork-test/a");
    Result<StoreLocation> again = OpenLocation("file:///tmp/fork-test/b");
    const bool fresh = mine.ok() && mine->store != parent->store;
    const bool cached = again.ok() && again->store == mine->store;
    _exit(fresh && cached ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child got its parent's store, or none";
  Result<StoreLocation> still = OpenLocation("file:///tmp/fork-test/c");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->store, parent->store);
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

// Stands in for a backend's store: a memory store whose Stat fails once
// with a 503 and retries through the options' retry environment.
class RetryingStore : public MemoryStore {
 public:
  RetryingStore(std::string bucket, RetryOptions retry) : MemoryStore(std::move(bucket)), retry_(std::move(retry)) {}
  Result<ObjectInfo> Stat(std::string_view key) override {
    int attempts = 0;
    auto attempt = [&]() -> Result<ObjectInfo> {
      RemoteError throttled;
      throttled.http_status = 503;
      if (++attempts == 1) return UnavailableError("injected 503").WithRemote(throttled);
      return MemoryStore::Stat(key);
    };
    return Retry(retry_.policy, Idempotency::kIdempotent, "stat", attempt, retry_.environment);
  }

 private:
  RetryOptions retry_;
};

// Registers a stand-in "s3" factory (this test links no backend) that takes
// the settings s3.color and s3.loud and counts its stores' retries as a
// backend does. Called by each test that uses it, since another test
// replaces the "s3" factory.
void RegisterFakeS3() {
  RegisterStoreFactory("s3", [](const Url& url, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
    SPOOL_RETURN_IF_ERROR(SchemeSettings(options, "s3", {"color", "loud"}).status());
    RetryOptions retry = CountingRetry(options);
    retry.environment.sleep = [](std::chrono::milliseconds) {};  // no real backoff in a test
    return std::shared_ptr<ObjectStore>(std::make_shared<RetryingStore>("registry-" + url.bucket, retry));
  });
}

TEST(RegistryTest, CacheKeyIsTheOptionsValuesNotTheirObjects) {
  RegisterFakeS3();
  auto options_with = [](std::string color) {
    StoreOptions options;
    options.endpoint_url = "http://127.0.0.1:3";
    options.settings["s3.color"] = std::move(color);
    options.settings["gs.anonymous"] = "true";  // another scheme's: ignored here
    return options;
  };
  Result<StoreLocation> blue = OpenLocation("s3://by-value/a", options_with("blue"));
  Result<StoreLocation> blue_again = OpenLocation("s3://by-value/b", options_with("blue"));
  Result<StoreLocation> red = OpenLocation("s3://by-value/a", options_with("red"));
  ASSERT_TRUE(blue.ok() && blue_again.ok() && red.ok()) << blue.status().ToString();
  EXPECT_EQ(blue->store, blue_again->store) << "equal values, separate StoreOptions objects";
  EXPECT_NE(blue->store, red->store) << "a setting of the scheme is part of the key";

  StoreOptions other_scheme_settings = options_with("blue");
  other_scheme_settings.settings["gs.anonymous"] = "false";
  Result<StoreLocation> same = OpenLocation("s3://by-value/c", other_scheme_settings);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->store, blue->store) << "another scheme's settings do not split the cache";

  StoreOptions other_policy = options_with("blue");
  other_policy.retry.policy.max_attempts = 2;
  Result<StoreLocation> fewer_attempts = OpenLocation("s3://by-value/c", other_policy);
  ASSERT_TRUE(fewer_attempts.ok());
  EXPECT_NE(fewer_attempts->store, blue->store) << "the retry policy is part of the key";
}

TEST(RegistryTest, StoresLiveAsLongAsTheirUsers) {
  std::weak_ptr<ObjectStore> first;
  {
    Result<StoreLocation> location = OpenLocation("mem://lifetime/k");
    ASSERT_TRUE(location.ok());
    first = location->store;
    Result<StoreLocation> again = OpenLocation("mem://lifetime/other");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->store, location->store) << "shared while in use";
  }
  EXPECT_TRUE(first.expired()) << "the registry does not keep an unused store alive";
  Result<StoreLocation> reopened = OpenLocation("mem://lifetime/k");
  ASSERT_TRUE(reopened.ok());
  EXPECT_NE(reopened->store, nullptr);
}

TEST(RegistryTest, StoresWithAnEnvironmentOfTheirOwnAreNeverShared) {
  StoreOptions options;
  options.retry.environment.sleep = [](std::chrono::milliseconds) {};
  Result<StoreLocation> a = OpenLocation("mem://own-environment/k", options);
  Result<StoreLocation> b = OpenLocation("mem://own-environment/k", options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->store, b->store);
}

TEST(RegistryTest, UnknownSettingsAreRejectedNamingTheKey) {
  RegisterFakeS3();
  StoreOptions options;
  options.settings["s3.colour"] = "blue";
  Result<StoreLocation> location = OpenLocation("s3://settings/k", options);
  ASSERT_EQ(location.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(location.status().message().find("s3.colour"), std::string::npos) << location.status().message();
  EXPECT_NE(location.status().message().find("s3.color"), std::string::npos) << "lists the known keys";

  StoreOptions no_scheme;
  no_scheme.settings["region"] = "eu-west-1";
  Result<StoreLocation> unprefixed = OpenLocation("mem://settings/k", no_scheme);
  ASSERT_EQ(unprefixed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unprefixed.status().message().find("\"region\""), std::string::npos) << unprefixed.status().message();

  StoreOptions mem_setting;
  mem_setting.settings["mem.anything"] = "x";
  EXPECT_EQ(OpenLocation("mem://settings/k", mem_setting).status().code(), StatusCode::kInvalidArgument);
}

TEST(RegistryTest, BoolSettingsParse) {
  EXPECT_TRUE(*ParseBoolSetting("s3.anonymous", "true"));
  EXPECT_TRUE(*ParseBoolSetting("s3.anonymous", "1"));
  EXPECT_FALSE(*ParseBoolSetting("s3.anonymous", "False"));
  Result<bool> bad = ParseBoolSetting("s3.anonymous", "maybe");
  ASSERT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("s3.anonymous"), std::string::npos);
}

TEST(RegistryTest, EachStoreCountsItsOwnRetriesOrTheCountersItWasGiven) {
  RegisterFakeS3();
  Result<StoreLocation> flaky = OpenLocation("s3://counted/k");
  Result<StoreLocation> other = OpenLocation("s3://counted-other/k");
  ASSERT_TRUE(flaky.ok() && other.ok());
  ASSERT_TRUE(WriteAll(*flaky->store, "k", "v").ok());
  ASSERT_TRUE(flaky->store->Stat("k").ok());
  EXPECT_EQ(flaky->store->counters().Snapshot().retries, 1u);
  EXPECT_EQ(flaky->store->counters().Snapshot().throttles, 1u) << "a 503 is a throttle";
  EXPECT_EQ(other->store->counters().Snapshot().retries, 0u);

  StoreOptions shared_counters;
  shared_counters.counters = std::make_shared<RequestCounters>();
  Result<StoreLocation> counted = OpenLocation("s3://counted/k", shared_counters);
  ASSERT_TRUE(counted.ok());
  EXPECT_NE(counted->store, flaky->store) << "stores with other counters are not shared";
  EXPECT_EQ(counted->store->shared_counters(), shared_counters.counters);
  ASSERT_TRUE(counted->store->Stat("k").ok());
  EXPECT_EQ(shared_counters.counters->Snapshot().retries, 1u);
  EXPECT_EQ(flaky->store->counters().Snapshot().retries, 1u);
}

}  // namespace
}  // namespace spool
