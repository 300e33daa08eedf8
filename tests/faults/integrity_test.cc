// Every whole read of a spool-written object is verified end to end, on Ceph
// RGW (which keeps no checksum of its own: spool's uploader stores the
// CRC32C as user metadata) and on the GCS server (which keeps crc32c): a
// byte flipped on the wire by the fault proxy, which the server never saw,
// fails the download with DataLoss and leaves nothing at the destination.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "spool/core/crc32c.h"
#include "spool/core/storage/registry.h"
#include "spool/core/storage/transfer.h"
#include "spool/gcs/gcs_store.h"
#include "spool/register_backends.h"
#include "tests/faults/fault_proxy.h"
#include "tests/faults/server_under_test.h"
#include "tests/support/bytes.h"
#include "tests/support/env.h"
#include "tests/support/files.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dir.h"

namespace spool::testing {
namespace {

namespace fs = std::filesystem;
using test_support::DeterministicBytes;
using test_support::GetEnv;

constexpr size_t kMiB = 1 << 20;
constexpr const char* kGcsBucket = "spool-integrity";

struct Backend {
  std::string name;      // "s3" or "gs"
  std::string base_url;  // "s3://bucket/prefix"
  std::string endpoint;  // the real server
  StoreOptions options;  // without endpoint_url
};

class Integrity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    RegisterAllBackends();
    ServerUnderTest server = ServerFor(GetParam(), "integrity", kGcsBucket);
    ASSERT_FALSE(server.endpoint.empty());
    endpoint_ = server.endpoint;
    base_ = server.base_url;
    options_ = server.options;
    proxy_ = FaultProxy::Start(HostPort(endpoint_));
    ASSERT_TRUE(proxy_);
    direct_ = Open(endpoint_);
    through_proxy_ = Open(proxy_->url());
    ASSERT_TRUE(direct_.store && through_proxy_.store);
  }

  StoreLocation Open(const std::string& endpoint) {
    StoreOptions options = options_;
    options.endpoint_url = endpoint;
    auto location = OpenLocation(base_, options);
    EXPECT_TRUE(location.ok()) << location.status().ToString();
    if (!location.ok()) return {};
    if (auto* gcs = dynamic_cast<gcs::GcsStore*>(location->store.get())) {
      Status created = gcs->client().InsertBucket(kGcsBucket, "spool-test");
      EXPECT_TRUE(created.ok() || created.code() == StatusCode::kAlreadyExists) << created.ToString();
    }
    return *location;
  }

  // Flips a byte of the next data GET (GCS: a media download, not the
  // object's metadata, whose damage is a parse error).
  std::string FlipRule() const {
    return GetParam() == "s3" ? R"({"kind": "flip", "method": "GET", "count": 1})"
                              : R"({"kind": "flip", "method": "GET", "query": "alt=media", "count": 1})";
  }

  // Uploads `bytes` as `name` the way `spool cp` does (from a file).
  std::string Upload(const std::string& name, const std::string& bytes) {
    const fs::path source = scratch_.path() / ("source-" + name);
    test_support::WriteFile(source, bytes);
    TransferOptions transfer;
    transfer.part_size = 5 * kMiB;
    auto written = UploadFile(source, *direct_.store, direct_.key + name, transfer);
    EXPECT_TRUE(written.ok()) << written.status().ToString();
    return direct_.key + name;
  }

  std::string endpoint_, base_;
  StoreOptions options_;
  std::unique_ptr<FaultProxy> proxy_;
  StoreLocation direct_, through_proxy_;
  test_support::TempDir scratch_;
};

TEST_P(Integrity, UploadsCarryAWholeObjectCrc32c) {
  for (size_t size : {1 * kMiB, 12 * kMiB}) {  // one request; parts or chunks
    const std::string bytes = DeterministicBytes(static_cast<uint32_t>(size), size);
    const std::string key = Upload("stat-" + std::to_string(size), bytes);
    auto info = direct_.store->Stat(key);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    ASSERT_TRUE(info->crc32c.has_value()) << key << ": no CRC32C, so reads of it cannot be verified";
    EXPECT_EQ(*info->crc32c, crc32c::Value(bytes.data(), bytes.size())) << key;
  }
}

TEST_P(Integrity, AFlippedByteOnTheWireFailsTheDownloadAndLeavesNothing) {
  for (size_t size : {1 * kMiB, 12 * kMiB}) {
    const std::string bytes = DeterministicBytes(7 + static_cast<uint32_t>(size), size);
    const std::string name = "flip-" + std::to_string(size);
    const std::string key = Upload(name, bytes);
    const fs::path destination = scratch_.path() / ("downloaded-" + name);
    TransferOptions transfer;
    transfer.part_size = 4 * kMiB;

    // A clean read through the proxy first: the proxy itself changes nothing.
    auto clean = DownloadFile(*through_proxy_.store, key, destination, transfer);
    ASSERT_TRUE(clean.ok()) << clean.status().ToString();
    EXPECT_EQ(test_support::ReadFile(destination), bytes);
    fs::remove(destination);

    proxy_->Arm(FlipRule());
    auto flipped = DownloadFile(*through_proxy_.store, key, destination, transfer);
    proxy_->Clear();
    ASSERT_FALSE(flipped.ok()) << name << ": a flipped byte was not noticed";
    EXPECT_EQ(flipped.status().code(), StatusCode::kDataLoss) << flipped.status().ToString();
    EXPECT_NE(flipped.status().message().find("CRC32C"), std::string::npos) << flipped.status().ToString();
    EXPECT_FALSE(fs::exists(destination));
    for (const auto& entry : fs::directory_iterator(scratch_.path())) {
      EXPECT_EQ(entry.path().filename().string().find("downloaded-"), std::string::npos)
          << "left behind: " << entry.path();
    }
  }
}

TEST_P(Integrity, AWholeReadOfAFlippedSmallObjectIsDataLoss) {
  const std::string bytes = DeterministicBytes(99, 256 * 1024);
  const std::string key = Upload("whole", bytes);
  proxy_->Arm(FlipRule());
  auto read = ReadAll(*through_proxy_.store, key);
  proxy_->Clear();
  ASSERT_FALSE(read.ok()) << "a flipped byte was not noticed";
  EXPECT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Servers, Integrity, ::testing::Values("s3", "gs"),
                         [](const auto& info) { return info.param == "s3" ? "CephRgw" : "GcsServer"; });

}  // namespace
}  // namespace spool::testing
