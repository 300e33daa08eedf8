// RequestCounters: what a store's requests did, per operation -- requests,
// bytes, errors by class, retries, throttles, stalls, and latency and
// time-to-first-byte histograms. One instance per store (or per group of
// stores that share it: a data loader's, a CLI command's); never
// process-wide, so a loader or a checkpoint manager reports exactly its own
// requests.
//
// Who counts: the HTTP backends wrap their transport with MeterTransport
// (core/http/metered_transport.h), which counts every exchange (one attempt)
// with the operation their classifier names; their retry loop's on_retry
// hook calls CountRetry (storage/registry.h CountingRetry), which charges
// the retry to the operation of the attempt that just failed on the same
// thread. The local and memory stores make no HTTP request: their counters
// stay at 0.
//
// Thread-safe and lock-free: every counter is a relaxed atomic. A snapshot is
// a consistent value of each counter, not of all of them together.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "spool/core/status.h"

namespace spool {

// What one HTTP exchange was for. Names (RequestOpName) are the `op` label
// of the Prometheus metrics (docs/metrics.md).
enum class RequestOp : uint8_t {
  kGet,         // a whole object's body
  kRangedGet,   // part of one (Range header)
  kPut,         // a whole object in one request
  kPartUpload,  // one part of a multipart upload (S3) or one chunk of a resumable session (GCS)
  kMultipart,   // starting, completing or aborting an upload; listing its parts or the bucket's uploads
  kCopy,        // a server-side copy (CopyObject, UploadPartCopy, rewrite)
  kList,        // a listing page
  kHead,        // an object's metadata
  kDelete,      // one delete, or a batch (S3 DeleteObjects)
  kTokenFetch,  // credentials: STS, instance metadata, OAuth token
  kOther,
};
inline constexpr size_t kRequestOps = static_cast<size_t>(RequestOp::kOther) + 1;
std::string_view RequestOpName(RequestOp op);

// Upper bounds (seconds) of the latency histograms' buckets; a last,
// unbounded bucket follows.
inline constexpr std::array<double, 15> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                            0.5,   1,      2.5,   5,    10,    30,   60};

struct HistogramCounts {
  std::array<uint64_t, kLatencyBuckets.size() + 1> buckets{};  // per bucket, not cumulative
  uint64_t count = 0;
  double sum = 0;  // seconds
};

struct RequestOpCounts {
  uint64_t requests = 0;        // exchanges (attempts), retried ones included
  uint64_t bytes_sent = 0;      // request bodies
  uint64_t bytes_received = 0;  // 2xx response bodies
  uint64_t errors_4xx = 0;      // answered 4xx (404 of a probe included)
  uint64_t errors_5xx = 0;      // answered 5xx
  uint64_t errors_transport = 0;  // no answer: refused, reset, TLS, timeout
  uint64_t stalls = 0;          // of those, timeouts and stalled transfers (DeadlineExceeded)
  uint64_t retries = 0;         // attempts repeated after a retryable failure
  uint64_t throttles = 0;       // of those, after the service asked to slow down (429, 503, SlowDown)
  HistogramCounts latency;      // request sent to response complete
  HistogramCounts first_byte;   // request sent to response headers
};

struct RequestCounts {
  // Totals over every operation (what LoaderCounters and the CLI's retry
  // summary report).
  uint64_t retries = 0;
  uint64_t throttles = 0;
  std::array<RequestOpCounts, kRequestOps> ops{};

  const RequestOpCounts& op(RequestOp which) const { return ops[static_cast<size_t>(which)]; }
  uint64_t requests() const;
  uint64_t bytes_sent() const;
  uint64_t bytes_received() const;
};

// One exchange as the transport saw it.
struct RequestExchange {
  RequestOp op = RequestOp::kOther;
  std::chrono::nanoseconds latency{0};
  std::chrono::nanoseconds first_byte{0};  // headers arrived; the latency when unknown
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  int http_status = 0;  // 0: no answer
  Status transport;     // the transport's error when there was no answer
};

// A latency histogram over kLatencyBuckets that many threads add to.
// Lock-free (relaxed atomics); not copyable.
class LatencyHistogram {
 public:
  void Add(std::chrono::nanoseconds value);
  HistogramCounts Snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_nanos_{0};
};

class RequestCounters {
 public:
  void CountExchange(const RequestExchange& exchange);
  // A retry after `failure`, charged to the operation of the last exchange
  // counted on this thread (the retry loop runs on the thread of the
  // attempt); kOther when there was none.
  void CountRetry(const Status& failure);
  RequestCounts Snapshot() const;

 private:
  struct Op {
    std::atomic<uint64_t> requests{0}, bytes_sent{0}, bytes_received{0};
    std::atomic<uint64_t> errors_4xx{0}, errors_5xx{0}, errors_transport{0}, stalls{0};
    std::atomic<uint64_t> retries{0}, throttles{0};
    LatencyHistogram latency, first_byte;
  };
  std::array<Op, kRequestOps> ops_;
};

}  // namespace spool
