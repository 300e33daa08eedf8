// ForwardingStore forwards every ObjectStore call, and keeps doing so when
// ObjectStore gains a method.
#include "tests/support/forwarding_store.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "spool/core/storage/memory_store.h"

namespace spool::test_support {
namespace {

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(SPOOL_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text between "class <name> " and the "};" that closes it.
std::string ClassBody(const std::string& source, const std::string& name) {
  const size_t start = source.find("\nclass " + name + " ");
  if (start == std::string::npos) return "";
  const size_t end = source.find("\n};", start);
  return source.substr(start, end - start);
}

// The names of the methods a class body declares `virtual` (before the
// name) or `override` (after the parameters); destructors left out.
std::set<std::string> Methods(const std::string& body, bool virtual_before) {
  // Comments out, and declarations that span lines joined, so a regex sees
  // each declaration whole.
  std::string code = std::regex_replace(body, std::regex(R"(//[^\n]*)"), "");
  code = std::regex_replace(code, std::regex(R"(\s+)"), " ");
  const std::regex declaration = virtual_before ? std::regex(R"(virtual ([^;{(]*?)(~?\w+)\()")
                                                : std::regex(R"(()(\w+)\([^;]*?\)\s*(const\s*)?override\b)");
  std::set<std::string> names;
  for (std::sregex_iterator it(code.begin(), code.end(), declaration), end; it != end; ++it) {
    const std::string name = (*it)[2];
    if (name[0] != '~') names.insert(name);
  }
  return names;
}

TEST(ForwardingStoreTest, OverridesEveryVirtualOfObjectStore) {
  const std::string store = ClassBody(ReadSource("spool/core/storage/object_store.h"), "ObjectStore");
  const std::string forwarding = ClassBody(ReadSource("tests/support/forwarding_store.h"), "ForwardingStore");
  ASSERT_FALSE(store.empty()) << "class ObjectStore not found in spool/core/storage/object_store.h";
  ASSERT_FALSE(forwarding.empty()) << "class ForwardingStore not found in tests/support/forwarding_store.h";
  const std::set<std::string> virtuals = Methods(store, true);
  const std::set<std::string> forwarded = Methods(forwarding, false);
  // The parse found the methods everyone knows about, so an empty or partial
  // parse cannot pass.
  for (const char* known : {"Describe", "Stat", "List", "OpenRead", "OpenWrite", "Delete", "Copy"}) {
    EXPECT_TRUE(virtuals.count(known)) << known << " not found among ObjectStore's virtuals";
  }
  for (const std::string& name : virtuals) {
    EXPECT_TRUE(forwarded.count(name)) << "ObjectStore::" << name
                                       << " is virtual but ForwardingStore does not forward it: add the "
                                          "forward to tests/support/forwarding_store.h/.cc and to the "
                                          "CallsReachTheWrappedStore test";
  }
}

// Records which of its methods was called last, so a call that fell through
// to ObjectStore's default (DeleteMany as a loop of Delete, OpenListed as
// OpenRead, ...) shows as the wrong name.
class SpyStore : public ObjectStore {
 public:
  std::string last;

  std::string Describe(std::string_view key) const override { return "spy://" + std::string(key); }
  Result<ObjectInfo> Stat(std::string_view) override { return Called<ObjectInfo>("Stat"); }
  Result<ListPage> List(const ListOptions&) override { return Called<ListPage>("List"); }
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view) override {
    return Called<std::unique_ptr<ReadableObject>>("OpenRead");
  }
  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo&) override {
    return Called<std::unique_ptr<ReadableObject>>("OpenListed");
  }
  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view, const WriteOptions&) override {
    return Called<std::unique_ptr<WritableObject>>("OpenWrite");
  }
  Status Delete(std::string_view) override { return Called<int>("Delete").status(); }
  Result<std::vector<DeleteFailure>> DeleteMany(const std::vector<std::string>&) override {
    return Called<std::vector<DeleteFailure>>("DeleteMany");
  }
  Result<ObjectInfo> Copy(std::string_view, std::string_view) override { return Called<ObjectInfo>("Copy"); }
  Result<std::unique_ptr<WritableObject>> OpenResumableUpload(std::string_view, const WriteOptions&,
                                                              const ResumeOptions&) override {
    return Called<std::unique_ptr<WritableObject>>("OpenResumableUpload");
  }
  bool resumable_uploads() const override { return true; }
  Status DiscardResumableUpload(std::string_view, const std::string&) override {
    return Called<int>("DiscardResumableUpload").status();
  }
  Result<std::vector<IncompleteUpload>> ListIncompleteUploads(std::string_view) override {
    return Called<std::vector<IncompleteUpload>>("ListIncompleteUploads");
  }
  Status AbortIncompleteUpload(const IncompleteUpload&) override {
    return Called<int>("AbortIncompleteUpload").status();
  }
  StoreAccess Access() const override {
    StoreAccess access;
    access.kind = "spy";
    return access;
  }
  Result<StoreIdentity> WhoAmI() override { return Called<StoreIdentity>("WhoAmI"); }
  Status CreateBucket(const BucketOptions&) override { return Called<int>("CreateBucket").status(); }

 private:
  // Fails with a code no default returns, so the caller sees the spy's answer.
  template <typename T>
  Result<T> Called(const char* name) {
    last = name;
    return Status(StatusCode::kResourceExhausted, name);
  }
};

TEST(ForwardingStoreTest, CallsReachTheWrappedStore) {
  auto spy = std::make_shared<SpyStore>();
  ForwardingStore store(spy);
  auto expect_forwarded = [&](const char* name, const Status& status) {
    EXPECT_EQ(spy->last, name);
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << name << ": " << status.ToString();
    EXPECT_EQ(status.message(), name);
    spy->last.clear();
  };
  EXPECT_EQ(store.Describe("k"), "spy://k");
  expect_forwarded("Stat", store.Stat("k").status());
  expect_forwarded("List", store.List({}).status());
  expect_forwarded("OpenRead", store.OpenRead("k").status());
  ObjectInfo listed;
  listed.key = "k";
  expect_forwarded("OpenListed", store.OpenListed(listed).status());
  expect_forwarded("OpenWrite", store.OpenWrite("k", {}).status());
  expect_forwarded("Delete", store.Delete("k"));
  expect_forwarded("DeleteMany", store.DeleteMany({"a", "b"}).status());
  expect_forwarded("Copy", store.Copy("a", "b").status());
  expect_forwarded("OpenResumableUpload", store.OpenResumableUpload("k", {}, {}).status());
  EXPECT_TRUE(store.resumable_uploads());
  expect_forwarded("DiscardResumableUpload", store.DiscardResumableUpload("k", "token"));
  expect_forwarded("ListIncompleteUploads", store.ListIncompleteUploads("p").status());
  IncompleteUpload upload;
  upload.key = "k";
  upload.id = "u";
  expect_forwarded("AbortIncompleteUpload", store.AbortIncompleteUpload(upload));
  EXPECT_EQ(store.Access().kind, "spy");
  expect_forwarded("WhoAmI", store.WhoAmI().status());
  expect_forwarded("CreateBucket", store.CreateBucket({}));
}

TEST(ForwardingStoreTest, SharesTheWrappedStoresCounters) {
  auto memory = std::make_shared<MemoryStore>("forwarding-store-test");
  ForwardingStore store(memory);
  EXPECT_EQ(&store.counters(), &memory->counters());
}

// A double overrides one call and inherits the rest: here a store whose
// writes fail still copies on the server as the memory store does.
TEST(ForwardingStoreTest, ADoubleChangesOnlyWhatItOverrides) {
  class NoWrites : public ForwardingStore {
   public:
    using ForwardingStore::ForwardingStore;
    Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key, const WriteOptions&) override {
      return UnavailableError("no writes to " + Describe(key));
    }
  };
  MemoryStore::ClearBucket("forwarding-store-double");
  auto memory = std::make_shared<MemoryStore>("forwarding-store-double");
  ASSERT_TRUE(WriteAll(*memory, "a", "bytes").ok());
  NoWrites store(memory);
  EXPECT_EQ(store.OpenWrite("b", {}).status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(store.Copy("a", "b").ok());
  EXPECT_EQ(ReadAll(store, "b").value_or(""), "bytes");
  MemoryStore::ClearBucket("forwarding-store-double");
}

}  // namespace
}  // namespace spool::test_support
