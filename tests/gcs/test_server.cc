#include "tests/gcs/test_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "spool/core/http/transport.h"
#include "tests/support/servers.h"

namespace spool::gcs::testing {

const TestServer& Server() {
  static const TestServer server = [] {
    TestServer s;
    s.dir = test_support::GcsServerDir();
    s.port = test_support::GcsServerPort();
    return s;
  }();
  EXPECT_NE(server.port, 0) << "the local GCS server is not running: run this test through ctest (fixture "
                               "gcs_server) or start tests/gcs/server/fixture.py start DIR and set "
                               "SPOOL_GCS_SERVER_DIR=DIR";
  return server;
}

std::shared_ptr<GcsStore> OpenStore(std::string_view bucket, GcsStoreOptions base) {
  base.bucket = std::string(bucket);
  base.endpoint = Server().endpoint();
  if (!base.credentials) base.anonymous = true;
  auto store = GcsStore::Open(base);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return nullptr;
  EnsureBucket(**store);
  return *store;
}

void EnsureBucket(GcsStore& store) {
  Status status = store.client().InsertBucket(store.bucket(), "spool-test");
  EXPECT_TRUE(status.ok() || status.code() == StatusCode::kAlreadyExists) << status.ToString();
}

namespace {
void PostFault(const std::string& method, std::string_view json) {
  static auto transport = MakeCurlTransport(HttpOptions{});
  HttpRequest request;
  request.method = method;
  request.url = Server().endpoint() + "/_fault";
  request.headers.Set("Content-Type", "application/json");
  request.body = json;
  auto response = transport->Send(request, nullptr);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  ASSERT_TRUE(response->ok()) << "fault " << json << ": HTTP " << response->status << " " << response->error_body;
}
}  // namespace

void ArmFault(std::string_view json) { PostFault("POST", json); }
void ClearFaults(std::string_view match) {
  PostFault("DELETE", R"({"match":")" + std::string(match) + R"("})");
}

std::string UniqueName(std::string_view stem) {
  static std::atomic<int> counter{0};
  static const long long run = std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007;
  return std::string(stem) + "-" + std::to_string(run) + "-" + std::to_string(counter++);
}

void FillPattern(uint64_t offset, std::span<char> out) {
  // splitmix64 of the 8-byte word index: cheap, and no two words alike.
  uint64_t word = offset / 8;
  size_t i = 0;
  while (i < out.size()) {
    uint64_t z = (word++ + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const size_t n = std::min<size_t>(8, out.size() - i);
    std::memcpy(out.data() + i, &z, n);
    i += n;
  }
}

std::string Pattern(uint64_t offset, size_t size) {
  std::string out(size, '\0');
  FillPattern(offset, out);
  return out;
}

}  // namespace spool::gcs::testing
