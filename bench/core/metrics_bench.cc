// What metrics cost: the work spool adds to each HTTP exchange (the metered
// transport around a transport that does nothing), to each DataLoader::Next
// (two clock reads and a histogram add), and one Prometheus collection of a
// process with a loader's and a checkpoint manager's worth of series. Set
// beside what those operations cost anyway (a loopback request is 100 us or
// more; a Next() delivers a batch) this bounds the share metrics take; see
// docs/metrics.md, "Cost".
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>

#include "spool/core/http/metered_transport.h"
#include "spool/core/request_counters.h"
#include "spool/metrics/metrics_writer.h"
#include "spool/metrics/registry.h"

namespace {

class NoopTransport : public spool::HttpTransport {
 public:
  spool::Result<spool::HttpResponse> Send(const spool::HttpRequest& request, spool::ResponseSink* sink) override {
    spool::HttpResponse response;
    response.status = 200;
    response.bytes_received = 1 << 20;
    if (sink) sink->OnHeaders(200, response.headers).IgnoreError();
    benchmark::DoNotOptimize(request.url.data());
    return response;
  }
};

spool::HttpRequest RangedGet() {
  spool::HttpRequest request;
  request.method = "GET";
  request.url = "http://127.0.0.1:7480/bucket/train/shard-00017.tfrecord";
  request.headers.Add("Range", "bytes=8388608-16777215");
  return request;
}

void BM_ExchangeWithoutMetrics(benchmark::State& state) {
  NoopTransport transport;
  const spool::HttpRequest request = RangedGet();
  for (auto _ : state) benchmark::DoNotOptimize(transport.Send(request, nullptr));
}
BENCHMARK(BM_ExchangeWithoutMetrics)->Threads(1)->Threads(2);

void BM_ExchangeWithMetrics(benchmark::State& state) {
  static auto counters = std::make_shared<spool::RequestCounters>();
  auto transport = spool::MeterTransport(std::make_shared<NoopTransport>(), counters,
                                         [](const spool::HttpRequest& r) { return r.headers.Has("Range")
                                                                                 ? spool::RequestOp::kRangedGet
                                                                                 : spool::RequestOp::kGet; });
  const spool::HttpRequest request = RangedGet();
  for (auto _ : state) benchmark::DoNotOptimize(transport->Send(request, nullptr));
}
BENCHMARK(BM_ExchangeWithMetrics)->Threads(1)->Threads(2);

// What DataLoader::Next adds: two clock reads and a histogram add.
void BM_NextWaitHistogram(benchmark::State& state) {
  static spool::LatencyHistogram histogram;
  for (auto _ : state) {
    const auto started = std::chrono::steady_clock::now();
    histogram.Add(std::chrono::steady_clock::now() - started);
  }
}
BENCHMARK(BM_NextWaitHistogram)->Threads(1)->Threads(2);

// One scrape: the text of request metrics for 4 operations of 3 owners, plus
// 20 loader and checkpoint series and 7 histograms.
void BM_CollectAndRender(benchmark::State& state) {
  spool::RequestCounters counters;
  for (spool::RequestOp op : {spool::RequestOp::kGet, spool::RequestOp::kRangedGet, spool::RequestOp::kHead,
                              spool::RequestOp::kPartUpload}) {
    spool::RequestExchange exchange;
    exchange.op = op;
    exchange.http_status = 200;
    exchange.latency = std::chrono::milliseconds(3);
    counters.CountExchange(exchange);
  }
  spool::LatencyHistogram histogram;
  histogram.Add(std::chrono::milliseconds(2));
  for (auto _ : state) {
    spool::metrics::MetricsWriter writer;
    for (const char* owner : {"loader", "checkpoint", "cli"}) {
      spool::metrics::WriteRequestMetrics(writer, counters.Snapshot(), {{"owner", owner}});
    }
    for (int i = 0; i < 20; ++i) writer.Counter("spool_loader_series_" + std::to_string(i) + "_total", "x", {}, i);
    for (int i = 0; i < 7; ++i) writer.Histogram("spool_h" + std::to_string(i) + "_seconds", "x", {}, histogram.Snapshot());
    benchmark::DoNotOptimize(writer.Text());
  }
}
BENCHMARK(BM_CollectAndRender);

}  // namespace

BENCHMARK_MAIN();
