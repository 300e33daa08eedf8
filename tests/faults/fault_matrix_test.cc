// The fault matrix: every network operation of spool (fault_operations.h)
// under every fault the proxy injects (fault_proxy.py), on Ceph RGW and the
// local GCS server. Each cell must either succeed with exactly the right
// data, or fail with a clear error after the retry budget; never leave a
// partial object, a committed checkpoint with bad files, a half-restored
// folder, or a hung loader. Stalls must be detected within the stall
// timeout. The run ends by printing the matrix: operation x fault -> outcome.
//
// The stores under test use a small retry budget and a 2 s stall timeout so
// the whole matrix runs in a few minutes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "spool/gcs/gcs_store.h"
#include "spool/s3/client.h"
#include "spool/s3/credentials.h"
#include "spool/s3/s3_store.h"
#include "tests/faults/fault_operations.h"
#include "tests/faults/fault_proxy.h"
#include "tests/faults/server_under_test.h"
#include "tests/support/env.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dir.h"

namespace spool::testing {
namespace {

using namespace std::chrono_literals;

constexpr auto kStallTimeout = 2s;   // HttpOptions::low_speed_time of the stores under test
constexpr int kStallSeconds = 30;    // how long the proxy stalls: far beyond the timeout
constexpr auto kStallBound = 20s;    // a stalled operation must end before this
constexpr auto kHangLimit = 180s;    // the watchdog: longer means hung
constexpr int kAttempts = 4;

RetryPolicy SmallRetry() {
  RetryPolicy policy;
  policy.max_attempts = kAttempts;
  policy.initial_backoff = 20ms;
  policy.max_backoff = 200ms;
  policy.max_elapsed = 60s;
  return policy;
}

HttpOptions FaultHttp() {
  HttpOptions http;
  http.connect_timeout = 2s;
  http.low_speed_bytes = 1;
  http.low_speed_time = std::chrono::duration_cast<std::chrono::seconds>(kStallTimeout);
  return http;
}

using test_support::GetEnv;

std::shared_ptr<ObjectStore> OpenS3(const std::string& endpoint, bool under_test) {
  const std::string bucket = test_support::S3TestBucket();
  s3::S3Options options;
  options.endpoint_url = endpoint;
  options.part_size = 5 << 20;
  options.concurrency = 4;
  if (under_test) options.retry.policy = SmallRetry();
  auto config = s3::ResolveConfig(options, bucket, CurrentEnv());
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  if (!config.ok()) return nullptr;
  auto credentials = std::make_shared<s3::StaticCredentialsProvider>(
      s3::Credentials{GetEnv("AWS_ACCESS_KEY_ID"), GetEnv("AWS_SECRET_ACCESS_KEY"), "", std::nullopt}, "test keys");
  auto client = std::make_shared<s3::S3Client>(*config, bucket, MakeCurlTransport(under_test ? FaultHttp() : HttpOptions{}),
                                               credentials);
  return std::make_shared<s3::S3Store>(client, nullptr, nullptr);
}

std::shared_ptr<ObjectStore> OpenGcs(const std::string& endpoint, bool under_test) {
  gcs::GcsStoreOptions options;
  options.bucket = "spool-faults";
  options.endpoint = endpoint;
  options.anonymous = true;
  if (under_test) {
    options.http = FaultHttp();
    options.retry.policy = SmallRetry();
  }
  options.resumable_threshold = 1 << 20;
  options.chunk_size = 512 << 10;
  options.chunks_in_flight = 2;
  auto store = gcs::GcsStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return nullptr;
  Status created = (*store)->client().InsertBucket(options.bucket, "spool-test");
  EXPECT_TRUE(created.ok() || created.code() == StatusCode::kAlreadyExists) << created.ToString();
  return *store;
}

// ---- Faults -------------------------------------------------------------------

enum class Expect { kSuccess, kCleanError, kEither };

struct Fault {
  std::string name;
  Expect expect;
  bool stall = false;   // the stall timeout must fire
  bool commit = false;  // aims at the operation's commit request
  // The rule's own fields; "flavor" is added for status answers.
  std::string fields;
};

const std::vector<Fault>& Faults() {
  static const std::vector<Fault> faults = {
      {"reset in response body", Expect::kSuccess, false, false, R"("kind": "reset_response", "bytes": 1000)"},
      {"reset in request", Expect::kSuccess, false, false, R"("kind": "reset_request", "bytes": 1000)"},
      {"stall in response body", Expect::kSuccess, true, false,
       R"("kind": "stall_response", "bytes": 1000, "seconds": )" + std::to_string(kStallSeconds)},
      {"stall in request", Expect::kSuccess, true, false,
       R"("kind": "stall_request", "bytes": 1000, "seconds": )" + std::to_string(kStallSeconds)},
      {"truncated body", Expect::kEither, false, false, R"("kind": "truncate", "fraction": 0.5)"},
      {"500 twice", Expect::kSuccess, false, false, R"("kind": "status", "status": 500, "count": 2)"},
      {"503 SlowDown twice", Expect::kSuccess, false, false,
       R"("kind": "status", "status": 503, "code": "SlowDown", "count": 2)"},
      {"429 twice", Expect::kSuccess, false, false, R"("kind": "status", "status": 429, "count": 2)"},
      {"first byte 1 s late", Expect::kSuccess, false, false, R"("kind": "delay", "seconds": 1)"},
      {"answer lost", Expect::kSuccess, false, false, R"("kind": "drop", "forward": true)"},
      {"503 for good", Expect::kCleanError, false, false, R"("kind": "status", "status": 503, "count": 100000)"},
      {"commit fails once", Expect::kSuccess, false, true, R"("kind": "status", "status": 500)"},
      {"commit answer lost", Expect::kSuccess, false, true, R"("kind": "status", "status": 500, "forward": true)"},
  };
  return faults;
}

std::string RuleJson(const Operation& op, const Fault& fault) {
  std::string rule = "{" + fault.fields + ", " + (fault.commit ? op.commit_target : op.target);
  if (op.backend == Backend::kGcs && fault.fields.find("\"status\"") != std::string::npos) {
    rule += R"(, "flavor": "gcs")";
    if (fault.fields.find("SlowDown") != std::string::npos) rule.replace(rule.find("SlowDown"), 8, "backendError");
  }
  return rule + "}";
}

// ---- The matrix ------------------------------------------------------------------

struct Cell {
  size_t op;
  size_t fault;
};

std::vector<Cell> Cells() {
  std::vector<Cell> cells;
  for (size_t o = 0; o < Operations().size(); ++o) {
    for (size_t f = 0; f < Faults().size(); ++f) {
      if (Faults()[f].commit && Operations()[o].commit_target.empty()) continue;  // nothing to commit
      cells.push_back({o, f});
    }
  }
  return cells;
}

std::mutex matrix_mu;
std::map<std::pair<size_t, size_t>, std::string> matrix;

void PrintMatrix() {
  std::lock_guard lock(matrix_mu);
  if (matrix.empty()) return;
  std::printf("\nFault matrix (operation x fault -> outcome; \"-\": the fault does not apply)\n");
  for (size_t f = 0; f < Faults().size(); ++f) std::printf("  F%-2zu %s\n", f + 1, Faults()[f].name.c_str());
  std::printf("\n%-24s", "operation");
  for (size_t f = 0; f < Faults().size(); ++f) std::printf(" %-11s", ("F" + std::to_string(f + 1)).c_str());
  std::printf("\n");
  for (size_t o = 0; o < Operations().size(); ++o) {
    std::printf("%-24s", Operations()[o].name.c_str());
    for (size_t f = 0; f < Faults().size(); ++f) {
      auto it = matrix.find({o, f});
      std::printf(" %-11s", it == matrix.end() ? "-" : it->second.c_str());
    }
    std::printf("\n");
  }
  std::printf("ok: succeeded with the right data; err:<Code>: failed cleanly; BAD: an invariant broke\n\n");
  std::fflush(stdout);
}

// Aborts the process when the operation it guards runs past `limit`: a hang
// must fail the run, not stall it.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::seconds limit)
      : thread_([this, what = std::move(what), limit] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "HUNG: %s did not finish within %lld s\n", what.c_str(),
                         static_cast<long long>(limit.count()));
            PrintMatrix();
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// The proxies and stores all cells share.
struct Rig {
  std::unique_ptr<FaultProxy> s3_proxy, gcs_proxy;
  OperationContext s3, gcs;  // store/direct/fixed_prefix filled; per cell the rest
};
Rig* rig = nullptr;

class MatrixEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    rig = new Rig;
    const std::string run = "faults-" + std::to_string(::getpid()) + "-" +
                            std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000);
    const std::string s3_endpoint = GetEnv("AWS_ENDPOINT_URL");
    ASSERT_FALSE(s3_endpoint.empty()) << "run through ctest: the ceph_rgw fixture sets AWS_ENDPOINT_URL";
    rig->s3_proxy = FaultProxy::Start(HostPort(s3_endpoint));
    const std::string gcs_endpoint = test_support::GcsServerEndpoint();
    rig->gcs_proxy = FaultProxy::Start(HostPort(gcs_endpoint));
    ASSERT_TRUE(rig->s3_proxy && rig->gcs_proxy);
    rig->s3 = {OpenS3(rig->s3_proxy->url(), true), OpenS3(s3_endpoint, false), run + "/fixed/", "", {}};
    rig->gcs = {OpenGcs(rig->gcs_proxy->url(), true), OpenGcs(gcs_endpoint, false), run + "/fixed/", "", {}};
    ASSERT_TRUE(rig->s3.store && rig->s3.direct && rig->gcs.store && rig->gcs.direct);
    for (const auto& op : Operations()) {
      if (!op.prepare) continue;
      Status prepared = op.prepare(op.backend == Backend::kS3 ? rig->s3 : rig->gcs);
      ASSERT_TRUE(prepared.ok()) << op.name << ": " << prepared.ToString();
    }
  }
  void TearDown() override {
    PrintMatrix();
    for (OperationContext* c : {&rig->s3, &rig->gcs}) {
      ListOptions options;
      options.prefix = c->fixed_prefix.substr(0, c->fixed_prefix.find('/') + 1);
      auto left = ListAll(*c->direct, options);
      if (!left.ok()) continue;
      std::vector<std::string> keys;
      for (const auto& object : left->objects) keys.push_back(object.key);
      c->direct->DeleteMany(keys).status().IgnoreError();
    }
    delete rig;
    rig = nullptr;
  }
};

const auto* const environment = ::testing::AddGlobalTestEnvironment(new MatrixEnvironment);

std::string CellName(const Cell& cell) {
  std::string name = Operations()[cell.op].name + "_" + Faults()[cell.fault].name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class FaultMatrix : public ::testing::TestWithParam<Cell> {};

TEST_P(FaultMatrix, OkOrCleanError) {
  ASSERT_NE(rig, nullptr);
  const Operation& op = Operations()[GetParam().op];
  const Fault& fault = Faults()[GetParam().fault];
  FaultProxy& proxy = op.backend == Backend::kS3 ? *rig->s3_proxy : *rig->gcs_proxy;
  OperationContext context = op.backend == Backend::kS3 ? rig->s3 : rig->gcs;
  const std::string name = CellName(GetParam());
  context.prefix = context.fixed_prefix.substr(0, context.fixed_prefix.find('/') + 1) + name + "/";
  const test_support::TempDir scratch("spool-faults");
  ASSERT_FALSE(scratch.path().empty());
  context.scratch = scratch.path();

  proxy.Clear();
  if (op.setup) {
    ASSERT_TRUE(op.setup(context).ok());
  }
  proxy.ClearLog();
  const std::string rule = RuleJson(op, fault);
  proxy.Arm(rule);
  const auto start = std::chrono::steady_clock::now();
  Verdict verdict;
  {
    Watchdog watchdog(op.name + " under " + fault.name, kHangLimit);
    verdict = op.run(context);
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  proxy.Clear();
  const int applied = proxy.FaultsApplied();

  std::string outcome = verdict.status.ok() ? "ok" : "err:" + std::string(StatusCodeName(verdict.status.code()));
  if (!verdict.violation.empty()) outcome = "BAD";
  {
    std::lock_guard lock(matrix_mu);
    matrix[{GetParam().op, GetParam().fault}] = outcome;
  }
  std::printf("%s x %s -> %s in %.1f s (%d faulted requests)%s%s\n", op.name.c_str(), fault.name.c_str(),
              outcome.c_str(), std::chrono::duration<double>(elapsed).count(), applied,
              verdict.status.ok() ? "" : ": ", verdict.status.ok() ? "" : verdict.status.ToString().c_str());

  EXPECT_TRUE(verdict.violation.empty()) << verdict.violation;
  EXPECT_GT(applied, 0) << "the rule " << rule << " never matched a request of " << op.name;
  if (fault.expect == Expect::kSuccess) {
    EXPECT_TRUE(verdict.status.ok()) << verdict.status.ToString();
  }
  if (fault.expect == Expect::kCleanError) {
    EXPECT_FALSE(verdict.status.ok()) << "succeeded although every matching request failed";
    EXPECT_NE(verdict.status.message().find("attempts"), std::string::npos)
        << "the error does not say the retries were used up: " << verdict.status.ToString();
  }
  if (!verdict.status.ok()) {
    // A clear error names what failed: a URL of the store.
    EXPECT_NE(verdict.status.message().find("://"), std::string::npos)
        << "the error names no URL: " << verdict.status.ToString();
  }
  if (fault.stall) {
    EXPECT_LT(elapsed, std::chrono::steady_clock::duration(kStallBound)) << "the stall was not detected within the " << kStallTimeout.count()
                                    << " s stall timeout (the proxy stalled " << kStallSeconds << " s)";
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, FaultMatrix, ::testing::ValuesIn(Cells()),
                         [](const ::testing::TestParamInfo<Cell>& info) { return CellName(info.param); });

}  // namespace
}  // namespace spool::testing
