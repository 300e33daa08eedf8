// What the request counters say about real exchanges with Ceph RGW and the
// GCS server, with faults injected by the fault proxy: exact counts of parts
// and bytes, and retries, throttles, resets and stalls as they happened.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

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
using namespace std::chrono_literals;
using test_support::DeterministicBytes;

constexpr uint64_t kMiB = 1 << 20;
constexpr const char* kGcsBucket = "spool-metrics";

RetryPolicy QuickRetry() {
  RetryPolicy policy;
  policy.max_attempts = 4;
  policy.initial_backoff = 20ms;
  policy.max_backoff = 100ms;
  return policy;
}

class RequestMetrics : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    RegisterAllBackends();
    ServerUnderTest server = ServerFor(GetParam(), "metrics", kGcsBucket);
    ASSERT_FALSE(server.endpoint.empty());
    endpoint_ = server.endpoint;
    base_ = server.base_url;
    options_ = server.options;
    options_.retry.policy = QuickRetry();
    proxy_ = FaultProxy::Start(HostPort(endpoint_));
    ASSERT_TRUE(proxy_);
    options_.endpoint_url = proxy_->url();
    options_.counters = counters_;
    auto location = OpenLocation(base_, options_);
    ASSERT_TRUE(location.ok()) << location.status().ToString();
    location_ = *location;
    if (auto* gcs = dynamic_cast<gcs::GcsStore*>(location_.store.get())) {
      Status created = gcs->client().InsertBucket(kGcsBucket, "spool-test");
      ASSERT_TRUE(created.ok() || created.code() == StatusCode::kAlreadyExists) << created.ToString();
    }
  }

  bool s3() const { return GetParam() == "s3"; }

  // Part uploads: S3 parts (PUT ?partNumber), GCS resumable chunks (PUT to
  // the session, ?upload_id, with bytes: not the "bytes */N" status query
  // that follows a failed chunk).
  std::string PartRule(const std::string& kind_fields, int count) const {
    const std::string match = s3() ? R"("query": "partNumber")"
                                   : R"("query": "upload_id", "headers": {"Content-Range": "^bytes [0-9]"})";
    return R"({"method": "PUT", )" + match + R"(, "count": )" + std::to_string(count) + ", " + kind_fields + "}";
  }

  Result<ObjectInfo> Upload(const std::string& name, const std::string& bytes) {
    const fs::path source = scratch_.path() / name;
    test_support::WriteFile(source, bytes);
    TransferOptions transfer;
    transfer.part_size = 5 * kMiB;
    return UploadFile(source, *location_.store, location_.key + name, transfer);
  }

  std::string endpoint_, base_;
  StoreOptions options_;
  std::shared_ptr<RequestCounters> counters_ = std::make_shared<RequestCounters>();
  std::unique_ptr<FaultProxy> proxy_;
  StoreLocation location_;
  test_support::TempDir scratch_{"spool-metrics"};
};

INSTANTIATE_TEST_SUITE_P(Servers, RequestMetrics, ::testing::Values("s3", "gs"),
                         [](const auto& info) { return info.param; });

TEST_P(RequestMetrics, AnUploadOfKPartsCountsKPartUploadsAndEveryByte) {
  const std::string bytes = DeterministicBytes(0, 20 * kMiB);
  const RequestCounts before = counters_->Snapshot();
  auto written = Upload("parts", bytes);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  const RequestCounts up = counters_->Snapshot();
  const RequestOpCounts& parts = up.op(RequestOp::kPartUpload);
  // S3: 20 MiB in parts of 8 MiB (s3::DefaultPartSize); GCS: resumable
  // chunks of the store's 16 MiB.
  const uint64_t expected_parts = 3 - (s3() ? 0 : 1);

  EXPECT_EQ(parts.requests - before.op(RequestOp::kPartUpload).requests, expected_parts);
  EXPECT_EQ(parts.bytes_sent, bytes.size());
  // S3: CreateMultipartUpload and CompleteMultipartUpload; GCS: the session's start.
  EXPECT_EQ(up.op(RequestOp::kMultipart).requests, s3() ? 2u : 1u);
  EXPECT_EQ(up.retries, 0u);
  EXPECT_EQ(parts.latency.count, expected_parts);
  EXPECT_GT(parts.latency.sum, 0);

  // The proxy saw the same part uploads.
  const std::string log = proxy_->Log();
  size_t logged = 0;
  for (size_t at = log.find(s3() ? "partNumber=" : "upload_id="); at != std::string::npos;
       at = log.find(s3() ? "partNumber=" : "upload_id=", at + 1)) {
    if (log.rfind("\"PUT\"", at) != std::string::npos) ++logged;
  }
  EXPECT_GE(logged, expected_parts);

  const fs::path target = scratch_.path() / "downloaded";
  ASSERT_TRUE(DownloadFile(*location_.store, location_.key + "parts", target).ok());
  // Every byte of the object arrived once in data GETs (GCS also receives
  // the object's JSON metadata, counted under head).
  const RequestCounts down = counters_->Snapshot();
  EXPECT_EQ(down.op(RequestOp::kGet).bytes_received + down.op(RequestOp::kRangedGet).bytes_received, bytes.size());
  EXPECT_EQ(down.bytes_sent(), up.bytes_sent());
}

TEST_P(RequestMetrics, ThrottlesAndResetsShowUpAsTheRetriesThatFollowedThem) {
  const std::string bytes = DeterministicBytes(0, 12 * kMiB);
  proxy_->Arm(PartRule(std::string(R"("kind": "status", "status": 503, "code": "SlowDown", "flavor": ")") +
                           (s3() ? "s3" : "gcs") + "\"",
                       2));
  auto written = Upload("throttled", bytes);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(proxy_->FaultsApplied(), 2);
  RequestCounts counts = counters_->Snapshot();
  const RequestOpCounts& parts = counts.op(RequestOp::kPartUpload);
  EXPECT_EQ(parts.errors_5xx, 2u);
  EXPECT_EQ(parts.retries, 2u);
  EXPECT_EQ(parts.throttles, 2u);
  EXPECT_EQ(counts.retries, 2u);
  EXPECT_EQ(counts.throttles, 2u);

  // A connection reset in the middle of a data GET: a transport error and
  // one retry, not a throttle.
  proxy_->Clear();
  proxy_->ClearLog();
  proxy_->Arm(s3() ? R"({"kind": "reset_response", "method": "GET", "bytes": 1000, "count": 1})"
                   : R"({"kind": "reset_response", "method": "GET", "query": "alt=media", "bytes": 1000, "count": 1})");
  ASSERT_TRUE(DownloadFile(*location_.store, location_.key + "throttled", scratch_.path() / "reset").ok());
  EXPECT_EQ(proxy_->FaultsApplied(), 1);
  counts = counters_->Snapshot();
  uint64_t transport_errors = 0, data_retries = 0;
  for (RequestOp op : {RequestOp::kGet, RequestOp::kRangedGet}) {
    transport_errors += counts.op(op).errors_transport;
    data_retries += counts.op(op).retries;
  }
  EXPECT_EQ(transport_errors, 1u);
  EXPECT_EQ(data_retries, 1u);
  EXPECT_EQ(counts.throttles, 2u);  // unchanged
}

// A stall needs a short stall window, which only the GCS store's options
// expose: the GcsStore opened directly, wired as its factory wires it.
TEST(RequestMetricsGcs, AStalledDownloadIsCountedAsAStallAndARetry) {
  const std::string endpoint = test_support::GcsServerEndpoint();
  auto proxy = FaultProxy::Start(HostPort(endpoint));
  ASSERT_TRUE(proxy);
  auto counters = std::make_shared<RequestCounters>();
  gcs::GcsStoreOptions options;
  options.bucket = kGcsBucket;
  options.endpoint = proxy->url();
  options.anonymous = true;
  options.counters = counters;
  options.http.low_speed_bytes = 1;
  options.http.low_speed_time = 2s;
  options.retry.policy = QuickRetry();
  options.retry.environment.on_retry = [counters](const Status& failure, int, std::chrono::milliseconds) {
    counters->CountRetry(failure);
  };
  auto store = gcs::GcsStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Status created = (*store)->client().InsertBucket(kGcsBucket, "spool-test");
  ASSERT_TRUE(created.ok() || created.code() == StatusCode::kAlreadyExists) << created.ToString();
  const std::string key = "metrics-stall-" + std::to_string(::getpid());
  ASSERT_TRUE(WriteAll(**store, key, DeterministicBytes(0, 256 << 10)).ok());
  proxy->Arm(R"({"kind": "stall_response", "method": "GET", "query": "alt=media", "bytes": 1000, "seconds": 8,
                 "count": 1})");
  auto read = ReadAll(**store, key);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->size(), 256u << 10);
  const RequestCounts counts = counters->Snapshot();
  uint64_t stalls = 0, retries = 0;
  for (RequestOp op : {RequestOp::kGet, RequestOp::kRangedGet}) {
    stalls += counts.op(op).stalls;
    retries += counts.op(op).retries;
  }
  EXPECT_EQ(stalls, 1u);
  EXPECT_EQ(retries, 1u);
  EXPECT_EQ(counts.throttles, 0u);
  (*store)->Delete(key).IgnoreError();
}

}  // namespace
}  // namespace spool::testing
