#include "spool/core/request_counters.h"

#include <algorithm>

#include "spool/core/retry.h"

namespace spool {
namespace {

// The operation of the last exchange this thread counted: what a retry that
// follows it on the same thread is charged to.
thread_local RequestOp last_op = RequestOp::kOther;

constexpr auto kRelaxed = std::memory_order_relaxed;

}  // namespace

std::string_view RequestOpName(RequestOp op) {
  switch (op) {
    case RequestOp::kGet: return "get";
    case RequestOp::kRangedGet: return "ranged_get";
    case RequestOp::kPut: return "put";
    case RequestOp::kPartUpload: return "part_upload";
    case RequestOp::kMultipart: return "multipart";
    case RequestOp::kCopy: return "copy";
    case RequestOp::kList: return "list";
    case RequestOp::kHead: return "head";
    case RequestOp::kDelete: return "delete";
    case RequestOp::kTokenFetch: return "token_fetch";
    case RequestOp::kOther: return "other";
  }
  return "other";
}

uint64_t RequestCounts::requests() const {
  uint64_t total = 0;
  for (const RequestOpCounts& op : ops) total += op.requests;
  return total;
}

uint64_t RequestCounts::bytes_sent() const {
  uint64_t total = 0;
  for (const RequestOpCounts& op : ops) total += op.bytes_sent;
  return total;
}

uint64_t RequestCounts::bytes_received() const {
  uint64_t total = 0;
  for (const RequestOpCounts& op : ops) total += op.bytes_received;
  return total;
}

void LatencyHistogram::Add(std::chrono::nanoseconds value) {
  const double seconds = std::chrono::duration<double>(value).count();
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds) - kLatencyBuckets.begin());
  buckets_[bucket].fetch_add(1, kRelaxed);
  count_.fetch_add(1, kRelaxed);
  sum_nanos_.fetch_add(static_cast<uint64_t>(std::max<int64_t>(value.count(), 0)), kRelaxed);
}

HistogramCounts LatencyHistogram::Snapshot() const {
  HistogramCounts out;
  for (size_t i = 0; i < buckets_.size(); ++i) out.buckets[i] = buckets_[i].load(kRelaxed);
  out.count = count_.load(kRelaxed);
  out.sum = static_cast<double>(sum_nanos_.load(kRelaxed)) / 1e9;
  return out;
}

void RequestCounters::CountExchange(const RequestExchange& exchange) {
  last_op = exchange.op;
  Op& op = ops_[static_cast<size_t>(exchange.op)];
  op.requests.fetch_add(1, kRelaxed);
  op.bytes_sent.fetch_add(exchange.bytes_sent, kRelaxed);
  op.bytes_received.fetch_add(exchange.bytes_received, kRelaxed);
  if (exchange.http_status == 0) {
    op.errors_transport.fetch_add(1, kRelaxed);
    if (exchange.transport.code() == StatusCode::kDeadlineExceeded) op.stalls.fetch_add(1, kRelaxed);
  } else if (exchange.http_status >= 500) {
    op.errors_5xx.fetch_add(1, kRelaxed);
  } else if (exchange.http_status >= 400) {
    op.errors_4xx.fetch_add(1, kRelaxed);
  }
  op.latency.Add(exchange.latency);
  op.first_byte.Add(exchange.first_byte);
}

void RequestCounters::CountRetry(const Status& failure) {
  Op& op = ops_[static_cast<size_t>(last_op)];
  op.retries.fetch_add(1, kRelaxed);
  if (IsThrottle(failure)) op.throttles.fetch_add(1, kRelaxed);
}

RequestCounts RequestCounters::Snapshot() const {
  RequestCounts out;
  for (size_t i = 0; i < kRequestOps; ++i) {
    const Op& op = ops_[i];
    RequestOpCounts& to = out.ops[i];
    to.requests = op.requests.load(kRelaxed);
    to.bytes_sent = op.bytes_sent.load(kRelaxed);
    to.bytes_received = op.bytes_received.load(kRelaxed);
    to.errors_4xx = op.errors_4xx.load(kRelaxed);
    to.errors_5xx = op.errors_5xx.load(kRelaxed);
    to.errors_transport = op.errors_transport.load(kRelaxed);
    to.stalls = op.stalls.load(kRelaxed);
    to.retries = op.retries.load(kRelaxed);
    to.throttles = op.throttles.load(kRelaxed);
    to.latency = op.latency.Snapshot();
    to.first_byte = op.first_byte.Snapshot();
    out.retries += to.retries;
    out.throttles += to.throttles;
  }
  return out;
}

}  // namespace spool
