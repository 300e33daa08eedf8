// exit_harness: one process of the lifecycle exit test (run_exit_test.py
// runs it hundreds of times). It starts spool work, then ends while that work
// is still in flight, and must end with the exit code it was given: no crash
// at exit, no hang, no sanitizer report.
//
//   exit_harness --scenario NAME --url ROOT --exit-code N [--delay-ms D]
//
// ROOT is a folder on any store (layout in test_root.h). --delay-ms lets the
// started work run D ms before the scenario ends, so that over many runs the
// end lands in every phase of it (default 0: at once). Scenarios:
//   setup                  make the bucket if needed and write the dataset
//   cleanup                delete everything under ROOT, abort S3 uploads
//   no-pending-uploads     fail if an S3 multipart upload is pending under
//                          ROOT (the driver checks each scenario's scratch/)
//   loader-return          DataLoader::Open, then return from main (the
//                          loader is destroyed by the return)
//   loader-exit            DataLoader::Open, then std::exit with the loader
//                          alive (only the atexit shutdown protects it)
//   loader-mid-epoch       take a few batches (fetches in flight), return
//   loader-mid-epoch-exit  the same, then std::exit
//   save-async-return      CheckpointManager::SaveAsync of 36 MiB, return
//   save-async-exit        the same, then std::exit
//   destroy-in-flight      destroy each object while its work runs, and
//                          check it left nothing: a writer (the object must
//                          not exist, no S3 multipart upload may remain), a
//                          ChunkReader and a RecordReader with read-ahead, a
//                          DataLoader mid-epoch (and one closed mid-epoch:
//                          nothing may read for it after Close returns), a
//                          CheckpointManager during SaveAsync (the step must
//                          stay uncommitted); then return
//
// Exit codes: N when the scenario ran and its checks passed; 2 for bad
// arguments; 3 when a scenario step or check failed; 4 when ending (the
// return or std::exit, through every destructor and exit handler) took over
// kEndingBound, i.e. something ignored its cancellation and exit had to give
// up waiting for it. The reason is printed on stderr. Anything else (a
// signal, a sanitizer's code) is the bug this test looks for.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/records/chunk_reader.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/manifest.h"
#include "spool/records/record_reader.h"
#include "spool/register_backends.h"
#include "tests/lifecycle/test_root.h"

namespace spool::lifecycle {
using checkpoint::AsyncSaveStart;
using checkpoint::CheckpointManager;
using checkpoint::CheckpointManifest;
using checkpoint::CheckpointSource;
using loader::Batch;
using loader::DataLoader;
using loader::DataLoaderOptions;

namespace {

constexpr uint64_t kMiB = 1 << 20;
// Destroying an object cancels its requests, which stop within about a
// second; the bound leaves room for sanitizer builds on a busy machine.
constexpr auto kDestroyBound = std::chrono::seconds(5);
// Exit waits up to 5 s for the default executor's tasks, which stop within
// about a second of being cancelled: an ending this long means it gave up.
constexpr auto kEndingBound = std::chrono::seconds(4);

// Set when the scenario starts to end; checked by the last exit handler.
std::optional<std::chrono::steady_clock::time_point> ending_since;

// Registered before spool is used, so it runs after every exit handler and
// static destructor of spool's.
void CheckEndingTime() {
  if (!ending_since) return;
  const auto took = std::chrono::steady_clock::now() - *ending_since;
  if (took <= kEndingBound) return;
  std::fprintf(stderr, "exit_harness: ending took %lld ms: some work did not stop when cancelled\n",
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  std::_Exit(4);
}

// What main keeps alive until it returns (or exits without destroying it).
struct Alive {
  std::unique_ptr<DataLoader> loader;
  std::unique_ptr<CheckpointManager> manager;
};

Result<std::unique_ptr<DataLoader>> OpenLoader(const TestRoot& root) {
  DataLoaderOptions options;
  options.inputs = {root.ManifestUrl()};
  options.rank = 0;  // whatever launcher variables the environment has
  options.world_size = 1;
  options.batch_size = 32;
  return DataLoader::Open(options);
}

Status TakeBatches(DataLoader& loader, int count) {
  for (int i = 0; i < count; ++i) {
    SPOOL_ASSIGN_OR_RETURN(std::optional<Batch> batch, loader.Next());
    if (!batch) return InternalError("the dataset ended after " + std::to_string(i) + " batches");
  }
  return OkStatus();
}

// A manager of `ckpt_url` with a background save of `step` started: three
// files of 12 MiB, each over one part, so S3 uploads them as multipart
// uploads and GCS as resumable ones.
Result<std::unique_ptr<CheckpointManager>> StartSave(const std::string& ckpt_url, int64_t step) {
  SPOOL_ASSIGN_OR_RETURN(auto manager, CheckpointManager::Open(ckpt_url));
  CheckpointSource source;
  for (int i = 0; i < 3; ++i) source.AddBuffer("model/part-" + std::to_string(i), DeterministicBytes(i, 12 * kMiB));
  SPOOL_ASSIGN_OR_RETURN(AsyncSaveStart start, manager->SaveAsync(step, std::move(source)));
  if (!start.started) return InternalError("SaveAsync did not start");
  return manager;
}

// Destroys `object` and fails if that took longer than kDestroyBound.
template <typename T>
Status DestroyInTime(std::unique_ptr<T>& object, std::string_view what) {
  const auto start = std::chrono::steady_clock::now();
  object.reset();
  const auto took = std::chrono::steady_clock::now() - start;
  if (took > kDestroyBound) {
    return DeadlineExceededError("destroying the " + std::string(what) + " took " +
                                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
                                 " ms");
  }
  return OkStatus();
}

// ---- the parts of destroy-in-flight ----------------------------------------

Status DestroyWriter(TestRoot& root, const std::string& scratch) {
  const std::string key = root.Key(scratch + "/writer/object.bin");
  SPOOL_ASSIGN_OR_RETURN(auto writer, root.store().OpenWrite(key));
  const std::string chunk = DeterministicBytes(7, kMiB);
  for (int i = 0; i < 32; ++i) SPOOL_RETURN_IF_ERROR(writer->Append(chunk));
  SPOOL_RETURN_IF_ERROR(DestroyInTime(writer, "writer"));
  return root.ExpectNothingAt(key);
}

Status DestroyReaders(TestRoot& root) {
  SPOOL_ASSIGN_OR_RETURN(auto manifest, records::ReadManifest(root.store(), root.ManifestKey()));
  const std::string shard = records::ShardKeys(root.ManifestKey(), manifest).front();
  // Small chunks, deep read-ahead: several reads are in flight at once.
  records::ReadAheadOptions io;
  io.chunk_size = 128 << 10;
  io.read_ahead = 2 * kMiB;

  SPOOL_ASSIGN_OR_RETURN(std::shared_ptr<ReadableObject> object, root.store().OpenRead(shard));
  auto chunks =
      std::make_unique<records::ChunkReader>(object, root.store().Describe(shard), 0, object->info().size, io);
  SPOOL_RETURN_IF_ERROR(chunks->Next().status());
  SPOOL_RETURN_IF_ERROR(DestroyInTime(chunks, "chunk reader"));

  records::RecordReaderOptions options;
  options.io = io;
  SPOOL_ASSIGN_OR_RETURN(auto reader, records::RecordReader::Open(root.store(), shard, options));
  std::string_view record;
  SPOOL_ASSIGN_OR_RETURN(bool got, reader->Next(&record));
  if (!got) return InternalError(root.store().Describe(shard) + " has no records");
  return DestroyInTime(reader, "record reader");
}

Status DestroyLoader(TestRoot& root) {
  SPOOL_ASSIGN_OR_RETURN(auto loader, OpenLoader(root));
  SPOOL_RETURN_IF_ERROR(TakeBatches(*loader, 2));
  return DestroyInTime(loader, "data loader");
}

// Close() returns only after the loader's tasks: none reads for it later.
Status CloseLoader(TestRoot& root) {
  SPOOL_ASSIGN_OR_RETURN(auto loader, OpenLoader(root));
  SPOOL_RETURN_IF_ERROR(TakeBatches(*loader, 2));
  loader->Close();
  const uint64_t read = loader->Counters().object_bytes;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (const uint64_t later = loader->Counters().object_bytes; later != read) {
    return FailedPreconditionError("the data loader read " + std::to_string(later - read) +
                                   " bytes after Close() returned");
  }
  return DestroyInTime(loader, "closed data loader");
}

Status DestroyManager(TestRoot& root, const std::string& scratch) {
  constexpr int64_t kStep = 5;
  const std::string ckpt = scratch + "/ckpt";
  SPOOL_ASSIGN_OR_RETURN(auto manager, StartSave(root.Url(ckpt), kStep));
  SPOOL_RETURN_IF_ERROR(DestroyInTime(manager, "checkpoint manager"));
  SPOOL_ASSIGN_OR_RETURN(auto fresh, CheckpointManager::Open(root.Url(ckpt)));
  SPOOL_ASSIGN_OR_RETURN(auto committed, fresh->List());
  for (const CheckpointManifest& manifest : committed) {
    if (manifest.step == kStep) {
      return FailedPreconditionError("step " + std::to_string(kStep) + " under " + root.Url(ckpt) +
                                     " was committed although its manager was destroyed during SaveAsync");
    }
  }
  return root.ExpectNoUploads(root.Key(ckpt + "/"));
}

// ---- scenarios -------------------------------------------------------------

enum class Ending { kReturn, kExit };

struct Scenario {
  const char* name;
  Ending ending;
  // `name` is the scenario's: each writes under scratch/<name>/.
  Status (*run)(TestRoot& root, std::string_view name, Alive& alive);
};

Status Setup(TestRoot& root, std::string_view, Alive&) { return root.WriteDataset(); }
Status Cleanup(TestRoot& root, std::string_view, Alive&) { return root.RemoveAll(); }
Status NoPendingUploads(TestRoot& root, std::string_view, Alive&) { return root.ExpectNoUploads(root.Key("")); }

Status OpenOnly(TestRoot& root, std::string_view, Alive& alive) {
  SPOOL_ASSIGN_OR_RETURN(alive.loader, OpenLoader(root));
  return OkStatus();
}

Status MidEpoch(TestRoot& root, std::string_view, Alive& alive) {
  SPOOL_ASSIGN_OR_RETURN(alive.loader, OpenLoader(root));
  return TakeBatches(*alive.loader, 3);
}

Status SaveInFlight(TestRoot& root, std::string_view name, Alive& alive) {
  SPOOL_ASSIGN_OR_RETURN(alive.manager, StartSave(root.Url(root.NewScratch(name) + "/ckpt"), 1));
  return OkStatus();
}

Status DestroyInFlight(TestRoot& root, std::string_view name, Alive&) {
  const std::string scratch = root.NewScratch(name);
  SPOOL_RETURN_IF_ERROR(DestroyWriter(root, scratch));
  SPOOL_RETURN_IF_ERROR(DestroyReaders(root));
  SPOOL_RETURN_IF_ERROR(DestroyLoader(root));
  SPOOL_RETURN_IF_ERROR(CloseLoader(root));
  return DestroyManager(root, scratch);
}

constexpr Scenario kScenarios[] = {
    {"setup", Ending::kReturn, &Setup},
    {"cleanup", Ending::kReturn, &Cleanup},
    {"no-pending-uploads", Ending::kReturn, &NoPendingUploads},
    {"loader-return", Ending::kReturn, &OpenOnly},
    {"loader-exit", Ending::kExit, &OpenOnly},
    {"loader-mid-epoch", Ending::kReturn, &MidEpoch},
    {"loader-mid-epoch-exit", Ending::kExit, &MidEpoch},
    {"save-async-return", Ending::kReturn, &SaveInFlight},
    {"save-async-exit", Ending::kExit, &SaveInFlight},
    {"destroy-in-flight", Ending::kReturn, &DestroyInFlight},
};

const Scenario* FindScenario(std::string_view name) {
  for (const Scenario& scenario : kScenarios) {
    if (name == scenario.name) return &scenario;
  }
  return nullptr;
}

int Usage(const char* message) {
  std::fprintf(stderr,
               "exit_harness: %s\n"
               "usage: exit_harness --scenario NAME --url ROOT --exit-code N [--delay-ms D]\n"
               "scenarios:",
               message);
  for (const Scenario& scenario : kScenarios) std::fprintf(stderr, " %s", scenario.name);
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace
}  // namespace spool::lifecycle

int main(int argc, char** argv) {
  using namespace spool::lifecycle;
  std::string scenario_name, url;
  std::optional<int> exit_code;
  int delay_ms = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 == argc) return Usage("every flag takes a value");
    const char* value = argv[++i];
    if (flag == "--scenario") {
      scenario_name = value;
    } else if (flag == "--url") {
      url = value;
    } else if (flag == "--exit-code") {
      exit_code = std::atoi(value);
    } else if (flag == "--delay-ms") {
      delay_ms = std::atoi(value);
    } else {
      return Usage(("unknown flag " + std::string(flag)).c_str());
    }
  }
  const Scenario* scenario = FindScenario(scenario_name);
  if (scenario == nullptr) return Usage(("unknown scenario '" + scenario_name + "'").c_str());
  if (url.empty() || !exit_code) return Usage("--url and --exit-code are required");

  std::atexit(&CheckEndingTime);
  spool::RegisterAllBackends();
  auto root = TestRoot::Open(url);
  if (!root.ok()) {
    std::fprintf(stderr, "exit_harness: %s\n", root.status().ToString().c_str());
    return 3;
  }
  Alive alive;  // declared after root: destroyed first when main returns
  spool::Status status = scenario->run(*root, scenario->name, alive);
  if (!status.ok()) {
    std::fprintf(stderr, "exit_harness %s: %s\n", scenario->name, status.ToString().c_str());
    return 3;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  ending_since = std::chrono::steady_clock::now();
  // std::exit runs the atexit handlers with the loader or the save still
  // working: the library's exit-time shutdown must make that safe.
  if (scenario->ending == Ending::kExit) std::exit(*exit_code);
  return *exit_code;
}
