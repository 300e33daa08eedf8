// The metrics pieces without a server: request counting per operation, the
// backends' classifiers, the Prometheus text, the registry's lifetime, and
// the exporter's endpoint and textfile on 127.0.0.1.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "spool/core/env.h"
#include "spool/core/http/metered_transport.h"
#include "spool/core/http/transport.h"
#include "spool/core/throttle.h"
#include "spool/gcs/request_ops.h"
#include "spool/metrics/exporter.h"
#include "spool/metrics/metrics_writer.h"
#include "spool/metrics/registry.h"
#include "spool/s3/request_ops.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/temp_dir.h"

namespace spool::metrics {
namespace {

using std::chrono::milliseconds;

using test_support::ScriptedTransport;

// A 2xx answer with ten bytes of body.
ScriptedTransport::Answer Ok() { return ScriptedTransport::Reply(200, "0123456789"); }

HttpRequest Request(std::string method, std::string url, std::string range = "") {
  HttpRequest request;
  request.method = std::move(method);
  request.url = std::move(url);
  if (!range.empty()) request.headers.Add("Range", range);
  return request;
}

TEST(RequestCounters, CountsEachExchangeByOperationAndOutcome) {
  auto inner = std::make_shared<ScriptedTransport>(ScriptedTransport::InOrder({
      Ok(),
      ScriptedTransport::Reply(404),
      ScriptedTransport::Reply(503),
      ScriptedTransport::NoResponse(UnavailableError("scripted transport failure")),
      Ok(),
  }));
  auto counters = std::make_shared<RequestCounters>();
  auto transport = MeterTransport(inner, counters, s3::ClassifyRequest);
  HttpRequest put = Request("PUT", "http://h/b/k?partNumber=1&uploadId=u");
  put.body = "abcdef";
  EXPECT_TRUE(transport->Send(put, nullptr).ok());
  EXPECT_TRUE(transport->Send(Request("HEAD", "http://h/b/k"), nullptr).ok());  // 404
  EXPECT_TRUE(transport->Send(Request("GET", "http://h/b/k", "bytes=0-9"), nullptr).ok());  // 503
  counters->CountRetry(UnavailableError("SlowDown (HTTP 503)"));  // the retry loop's hook, same thread
  EXPECT_FALSE(transport->Send(Request("GET", "http://h/b/k", "bytes=0-9"), nullptr).ok());  // reset
  std::string got;
  StringSink sink(&got);
  EXPECT_TRUE(transport->Send(Request("GET", "http://h/b/k", "bytes=0-9"), &sink).ok());

  const RequestCounts counts = counters->Snapshot();
  const RequestOpCounts& part = counts.op(RequestOp::kPartUpload);
  EXPECT_EQ(part.requests, 1u);
  EXPECT_EQ(part.bytes_sent, 6u);
  EXPECT_EQ(counts.op(RequestOp::kHead).errors_4xx, 1u);
  const RequestOpCounts& ranged = counts.op(RequestOp::kRangedGet);
  EXPECT_EQ(ranged.requests, 3u);
  EXPECT_EQ(ranged.errors_5xx, 1u);
  EXPECT_EQ(ranged.errors_transport, 1u);
  EXPECT_EQ(ranged.stalls, 0u);
  EXPECT_EQ(ranged.retries, 1u);
  EXPECT_EQ(ranged.bytes_received, 10u);
  EXPECT_EQ(ranged.latency.count, 3u);
  EXPECT_EQ(ranged.first_byte.count, 3u);
  EXPECT_EQ(counts.requests(), 5u);
  EXPECT_EQ(counts.retries, 1u);
  EXPECT_EQ(got, "0123456789");
}

TEST(RequestCounters, StallsAreTransportErrorsOfTheirOwn) {
  auto inner = std::make_shared<ScriptedTransport>(
      ScriptedTransport::InOrder({ScriptedTransport::NoResponse(DeadlineExceededError("scripted transport stall"))}));
  auto counters = std::make_shared<RequestCounters>();
  auto transport = MeterTransport(inner, counters, gcs::ClassifyRequest);
  EXPECT_FALSE(transport->Send(Request("GET", "http://h/storage/v1/b/bk/o/name?alt=media"), nullptr).ok());
  counters->CountRetry(DeadlineExceededError("stalled"));
  const RequestCounts counts = counters->Snapshot();
  const RequestOpCounts& get = counts.op(RequestOp::kGet);
  EXPECT_EQ(get.stalls, 1u);
  EXPECT_EQ(get.errors_transport, 1u);
  EXPECT_EQ(get.retries, 1u);
  EXPECT_EQ(get.throttles, 0u);
}

TEST(RequestClassifiers, NameEveryS3AndGcsOperation) {
  EXPECT_EQ(s3::ClassifyRequest(Request("GET", "http://h/b/k")), RequestOp::kGet);
  EXPECT_EQ(s3::ClassifyRequest(Request("GET", "http://h/b/k", "bytes=0-1")), RequestOp::kRangedGet);
  EXPECT_EQ(s3::ClassifyRequest(Request("GET", "http://h/b?list-type=2&prefix=x")), RequestOp::kList);
  EXPECT_EQ(s3::ClassifyRequest(Request("GET", "http://h/b?uploads&prefix=x")), RequestOp::kMultipart);
  EXPECT_EQ(s3::ClassifyRequest(Request("GET", "http://h/b/k?uploadId=u")), RequestOp::kMultipart);
  EXPECT_EQ(s3::ClassifyRequest(Request("PUT", "http://h/b/k")), RequestOp::kPut);
  EXPECT_EQ(s3::ClassifyRequest(Request("PUT", "http://h/b/k?partNumber=2&uploadId=u")), RequestOp::kPartUpload);
  HttpRequest copy = Request("PUT", "http://h/b/k");
  copy.headers.Add("x-amz-copy-source", "/b/other");
  EXPECT_EQ(s3::ClassifyRequest(copy), RequestOp::kCopy);
  EXPECT_EQ(s3::ClassifyRequest(Request("POST", "http://h/b/k?uploads")), RequestOp::kMultipart);
  EXPECT_EQ(s3::ClassifyRequest(Request("POST", "http://h/b/k?uploadId=u")), RequestOp::kMultipart);
  EXPECT_EQ(s3::ClassifyRequest(Request("POST", "http://h/b?delete")), RequestOp::kDelete);
  EXPECT_EQ(s3::ClassifyRequest(Request("DELETE", "http://h/b/k")), RequestOp::kDelete);
  EXPECT_EQ(s3::ClassifyRequest(Request("DELETE", "http://h/b/k?uploadId=u")), RequestOp::kMultipart);
  EXPECT_EQ(s3::ClassifyRequest(Request("HEAD", "http://h/b/k")), RequestOp::kHead);

  const std::string api = "http://h/storage/v1/b/bk/o";
  EXPECT_EQ(gcs::ClassifyRequest(Request("GET", api + "/name?alt=media")), RequestOp::kGet);
  EXPECT_EQ(gcs::ClassifyRequest(Request("GET", api + "/name?alt=media", "bytes=0-1")), RequestOp::kRangedGet);
  EXPECT_EQ(gcs::ClassifyRequest(Request("GET", api + "?prefix=x")), RequestOp::kList);
  EXPECT_EQ(gcs::ClassifyRequest(Request("GET", api + "/name")), RequestOp::kHead);
  EXPECT_EQ(gcs::ClassifyRequest(Request("DELETE", api + "/name")), RequestOp::kDelete);
  EXPECT_EQ(gcs::ClassifyRequest(Request("POST", api + "/name/rewriteTo/b/bk/o/other")), RequestOp::kCopy);
  EXPECT_EQ(gcs::ClassifyRequest(Request("POST", "http://h/upload/storage/v1/b/bk/o?uploadType=media&name=n")),
            RequestOp::kPut);
  EXPECT_EQ(gcs::ClassifyRequest(Request("POST", "http://h/upload/storage/v1/b/bk/o?uploadType=resumable&name=n")),
            RequestOp::kMultipart);
  HttpRequest chunk = Request("PUT", "http://h/upload/storage/v1/b/bk/o?uploadType=resumable&upload_id=s");
  chunk.headers.Add("Content-Range", "bytes 0-99/*");
  EXPECT_EQ(gcs::ClassifyRequest(chunk), RequestOp::kPartUpload);
  HttpRequest status = Request("PUT", "http://h/upload/storage/v1/b/bk/o?uploadType=resumable&upload_id=s");
  status.headers.Add("Content-Range", "bytes */100");
  EXPECT_EQ(gcs::ClassifyRequest(status), RequestOp::kMultipart);
  EXPECT_EQ(gcs::ClassifyRequest(Request("POST", "https://oauth2.googleapis.com/token")), RequestOp::kTokenFetch);
}

TEST(MetricsWriter, WritesTheTextFormatAndSumsRepeatedSeries) {
  MetricsWriter writer;
  writer.Counter("spool_things_total", "things\nseen", {{"owner", "a\"b"}}, 2);
  writer.Counter("spool_things_total", "ignored help", {{"owner", "a\"b"}}, 3);
  writer.Gauge("spool_held_bytes", "bytes held", {}, 1.5);
  HistogramCounts histogram;
  histogram.buckets[0] = 1;   // <= 0.001
  histogram.buckets[9] = 2;   // <= 1
  histogram.buckets[15] = 1;  // > 60
  histogram.count = 4;
  histogram.sum = 62.5;
  writer.Histogram("spool_wait_seconds", "waits", {{"op", "get"}}, histogram);
  const std::string text = writer.Text();
  EXPECT_NE(text.find("# HELP spool_things_total things\\nseen\n# TYPE spool_things_total counter\n"
                      "spool_things_total{owner=\"a\\\"b\"} 5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE spool_held_bytes gauge\nspool_held_bytes 1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("spool_wait_seconds_bucket{op=\"get\",le=\"0.001\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("spool_wait_seconds_bucket{op=\"get\",le=\"0.5\"} 1\n"
                      "spool_wait_seconds_bucket{op=\"get\",le=\"1\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("spool_wait_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"
                      "spool_wait_seconds_sum{op=\"get\"} 62.5\nspool_wait_seconds_count{op=\"get\"} 4\n"),
            std::string::npos)
      << text;
}

TEST(MetricsRegistry, CollectsWhileRegisteredOnly) {
  MetricsRegistry registry;
  {
    auto registration = registry.Add([](MetricsWriter& writer) { writer.Counter("spool_x_total", "x", {}, 7); });
    EXPECT_NE(registry.Text().find("spool_x_total 7\n"), std::string::npos);
    MetricsRegistry::Registration moved = std::move(registration);
    EXPECT_NE(registry.Text().find("spool_x_total 7\n"), std::string::npos);
  }
  EXPECT_EQ(registry.Text().find("spool_x_total"), std::string::npos);
  EXPECT_NE(registry.Text().find("spool_build_info{version="), std::string::npos);
}

TEST(MetricsRegistry, ReportsEveryLiveStoresRetryQuotaAndLimits) {
  MetricsRegistry registry;
  {
    // Paced by this process alone: the host's block would outlive the test.
    ScopedEnvOverride process_scope(Env::Fixed({{"SPOOL_THROTTLE_SCOPE", "process"}}));
    auto throttle = RetryThrottle::ForStore("s3://metrics-throttle", "http://127.0.0.1:1");
    ASSERT_TRUE(throttle->Acquire().ok());
    ASSERT_TRUE(throttle->Acquire().ok());
    throttle->Record(UnavailableError("slow down").WithRemote(RemoteError{503, "SlowDown", ""}));
    int cost = 0;
    ASSERT_TRUE(throttle->SpendRetry(UnavailableError("slow down"), &cost));
    const std::string text = registry.Text();
    EXPECT_NE(text.find("spool_retry_quota_tokens{store=\"s3://metrics-throttle\"} 495\n"), std::string::npos) << text;
    EXPECT_NE(text.find("spool_throttled_responses_total{store=\"s3://metrics-throttle\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("spool_concurrency_limit{store=\"s3://metrics-throttle\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("spool_requests_in_flight{store=\"s3://metrics-throttle\"} 2\n"), std::string::npos);
    EXPECT_NE(text.find("spool_request_rate_limit{store=\"s3://metrics-throttle\"}"), std::string::npos);
    EXPECT_NE(text.find("spool_retry_quota_refusals_total{store=\"s3://metrics-throttle\"} 0\n"), std::string::npos);
    throttle->Release();
    throttle->Release();
  }
  // Gone with the last store that used it.
  EXPECT_EQ(registry.Text().find("s3://metrics-throttle"), std::string::npos);
}

TEST(MetricsExporter, ServesMetricsOnTheLoopbackAndWritesTheTextfile) {
  MetricsRegistry registry;
  auto registration = registry.Add([](MetricsWriter& writer) { writer.Counter("spool_y_total", "y", {}, 3); });
  test_support::TempDir dir("spool-metrics-test");
  ExporterOptions options;
  options.port = 0;  // any free port
  options.address = "127.0.0.1";
  options.file = dir.path() / "spool.prom";
  options.registry = &registry;
  auto exporter = MetricsExporter::Start(options);
  ASSERT_TRUE(exporter.ok()) << exporter.status().ToString();
  ASSERT_NE((*exporter)->port(), 0);
  auto http = MakeCurlTransport(HttpOptions{});
  const std::string base = "http://127.0.0.1:" + std::to_string((*exporter)->port());
  std::string body;
  StringSink sink(&body);
  auto response = http->Send(Request("GET", base + "/metrics"), &sink);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->headers.Get("Content-Type").value_or(""), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(body.find("spool_y_total 3\n"), std::string::npos) << body;
  auto missing = http->Send(Request("GET", base + "/other"), nullptr);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  // The file exists from the start and holds the last values after Close.
  std::ifstream first(options.file);
  EXPECT_TRUE(first.good());
  (*exporter)->Close();
  std::ifstream in(options.file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("spool_y_total 3\n"), std::string::npos) << text;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "spool.prom.tmp"));
  // Closed, nothing answers on the port.
  EXPECT_FALSE(http->Send(Request("GET", base + "/metrics"), nullptr).ok());
}

TEST(MetricsExporter, EnvironmentIsOptInAndCheckedNotGuessed) {
  {
    ScopedEnvOverride nothing_set(Env::Fixed({}));
    auto none = MetricsExporter::FromEnvironment();
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(*none, nullptr);
  }
  ScopedEnvOverride bad_port(Env::Fixed({{"SPOOL_METRICS_PORT", "ninety"}}));
  auto bad = MetricsExporter::FromEnvironment();
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("SPOOL_METRICS_PORT"), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace spool::metrics
