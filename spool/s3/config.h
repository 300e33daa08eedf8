// Where and how to reach S3 for one bucket: endpoint, region, addressing
// style, TLS CA bundle, payload signing, transfer sizes. Resolved once per
// store from, in this order: S3Options, the environment
// (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION,
// AWS_CA_BUNDLE), the profile in ~/.aws/config, and AWS's defaults.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "spool/core/env.h"
#include "spool/core/executor.h"
#include "spool/core/request_counters.h"
#include "spool/core/retry.h"
#include "spool/core/status.h"
#include "spool/core/storage/ranged_reads.h"

namespace spool::s3 {

enum class AddressingStyle {
  kAuto,     // path-style for custom endpoints, IP addresses and dotted buckets
  kPath,     // https://endpoint/bucket/key
  kVirtual,  // https://bucket.endpoint/key
};

enum class PayloadSigning {
  // Every body carries one digest the server checks: the signed SHA-256, or
  // with UNSIGNED-PAYLOAD a Content-MD5. kAuto signs over http (nothing else
  // protects the bytes) and, over https, where this CPU has SHA-256
  // instructions (HasSha256Instructions, crypto.h: then SHA-256 costs less
  // than MD5); otherwise it sends Content-MD5, which TLS backs up.
  kAuto,
  kSigned,    // x-amz-content-sha256 is the body's SHA-256
  kUnsigned,  // x-amz-content-sha256: UNSIGNED-PAYLOAD, with Content-MD5
};

// Everything an S3Store is opened with; every field is read. The "s3"
// factory of register.h fills it from StoreOptions.
struct S3Options {
  std::string endpoint_url;      // empty: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile, AWS's
  std::string ca_bundle;         // PEM file of the CAs to trust; empty: AWS_CA_BUNDLE, the system's
  Executor* executor = nullptr;  // default: DefaultExecutor(); must outlive the store
  ByteBudget* budget = nullptr;  // default: DefaultByteBudget(); must outlive the store
  // Where every exchange is counted (ObjectStore::counters()); empty: not counted.
  std::shared_ptr<RequestCounters> counters;
  std::string region;      // empty: AWS_REGION, AWS_DEFAULT_REGION, the profile, us-east-1
  std::string profile;     // empty: AWS_PROFILE, else "default"
  bool anonymous = false;  // unsigned requests, no credentials (--no-sign-request)
  AddressingStyle addressing = AddressingStyle::kAuto;
  PayloadSigning payload_signing = PayloadSigning::kAuto;
  // Bytes per upload part and per ranged GET (RangedReadsOf); 0: derived
  // (see DefaultPartSize).
  uint64_t part_size = 0;
  int concurrency = 0;  // parts/ranges in flight per object; 0: kDefaultConcurrency
  // How every request of the store retries. Credential fetches (STS,
  // container, instance metadata) make one request each inside this loop
  // (core/retry.h); the environment lets tests run the backoff on a fake
  // clock.
  RetryOptions retry;
};

struct Endpoint {
  std::string scheme;  // "http" or "https"
  std::string host;    // "s3.us-east-1.amazonaws.com", "127.0.0.1"
  int port = 0;        // 0: the scheme's default
  // "host" or "host:port" as sent in the Host header (no default port).
  std::string HostHeader() const;
  std::string ToString() const;  // "http://127.0.0.1:47480"
};

// "http://127.0.0.1:47480", "https://minio.example.com" -> Endpoint;
// InvalidArgument naming the text for anything else.
Result<Endpoint> ParseEndpoint(const std::string& text);

struct ResolvedConfig {
  Endpoint endpoint;
  bool custom_endpoint = false;  // false: AWS's own s3.<region>.amazonaws.com
  std::string region;
  bool path_style = false;
  bool sign_payload = true;
  std::string ca_bundle;
  std::string profile;
  bool anonymous = false;
  uint64_t part_size = 0;
  int concurrency = 0;
  RetryOptions retry;  // as given in S3Options
};

// Resolves everything for `bucket`. Errors are InvalidArgument naming the
// setting and where it came from.
Result<ResolvedConfig> ResolveConfig(const S3Options& options, const std::string& bucket, const Env& env);

// S3 allows 10,000 parts of at most 5 GiB. The default part is 8 MiB (the
// AWS CLI's), raised to whole MiB so that `expected_size` fits in 10,000
// parts; with no expected size, 8 MiB (the writer grows parts as it goes,
// PartSizeFor in s3_writer.h, so 5 TiB still fits).
uint64_t DefaultPartSize(uint64_t expected_size);
inline constexpr uint64_t kMinPartSize = 5ull << 20;
inline constexpr uint64_t kDefaultPartSize = 8ull << 20;
inline constexpr uint64_t kMaxPartSize = 5ull << 30;
inline constexpr int kMaxParts = 10'000;
// Parts in flight per object: 8, since loopback and LAN throughput stops
// growing past 4-8 connections, and 8 x 8 MiB stays far below the default
// byte budget (512 MiB) even with several objects moving at once.
inline constexpr int kDefaultConcurrency = 8;

// How the store's readers split a large read: into GETs of the part size,
// the concurrency of them at once (the same two knobs as uploads).
inline RangedReads RangedReadsOf(const ResolvedConfig& config) {
  return {config.part_size != 0 ? config.part_size : kDefaultPartSize,
          config.concurrency > 0 ? config.concurrency : kDefaultConcurrency};
}

}  // namespace spool::s3
