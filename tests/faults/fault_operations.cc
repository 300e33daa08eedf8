#include "tests/faults/fault_operations.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/record_writer.h"
#include "tests/support/files.h"

namespace spool::testing {
using checkpoint::CheckpointManager;
using checkpoint::CheckpointSource;
using checkpoint::ExistingFolder;
using loader::DataLoader;
using loader::DataLoaderOptions;

namespace {

constexpr size_t kMiB = 1 << 20;
constexpr size_t kSmallObject = 1 * kMiB;     // one PUT, one GET
constexpr size_t kLargeObject = 12 * kMiB;    // 3 parts / ranges of 5 MiB (S3)
constexpr size_t kResumableObject = 2 * kMiB; // 4 chunks of 512 KiB (GCS)
constexpr int kListedObjects = 25;            // 3 pages of 10
constexpr int kDeletedObjects = 5;
constexpr int kShards = 3;
constexpr int kRecordsPerShard = 150;

// The outcome of an operation that wrote `expected` under `key`: after a
// success the object is exactly `expected`; after a failure it is absent or
// exactly `expected` (the write happened, its answer was lost), never partial.
Verdict CheckWritten(ObjectStore& direct, const std::string& key, const std::string& expected, Status status) {
  Verdict verdict{std::move(status), ""};
  auto stored = ReadAll(direct, key);
  if (verdict.status.ok()) {
    if (!stored.ok()) verdict.violation = "reported written but reads back as " + stored.status().ToString();
    else if (*stored != expected) verdict.violation = "reported written but holds different bytes";
  } else if (stored.ok() && *stored != expected) {
    verdict.violation = "a failed write left a partial object of " + std::to_string(stored->size()) + " bytes";
  } else if (!stored.ok() && stored.status().code() != StatusCode::kNotFound) {
    verdict.violation = "cannot check the object: " + stored.status().ToString();
  }
  return verdict;
}

Verdict CheckRead(Status status, const std::string& got, const std::string& expected) {
  Verdict verdict{std::move(status), ""};
  if (verdict.status.ok() && got != expected) verdict.violation = "read returned different bytes";
  return verdict;
}

Result<std::string> ReadWhole(ObjectStore& store, const std::string& key) {
  SPOOL_ASSIGN_OR_RETURN(auto object, store.OpenRead(key));
  std::string buffer(object->info().size, '\0');
  SPOOL_ASSIGN_OR_RETURN(size_t n, object->ReadAt(0, buffer));
  buffer.resize(n);
  return buffer;
}

// ---- GETs -----------------------------------------------------------------

Operation ReadOperation(std::string name, size_t size) {
  const std::string leaf = "get-" + std::to_string(size);
  Operation op{std::move(name), Backend::kS3, R"("method": "GET", "query": "^$")", "", nullptr, nullptr, nullptr};
  op.prepare = [leaf, size](OperationContext& c) {
    return WriteAll(*c.direct, c.fixed_prefix + leaf, TestBytes(size, size)).status();
  };
  op.run = [leaf, size](OperationContext& c) {
    auto got = ReadWhole(*c.store, c.fixed_prefix + leaf);
    return CheckRead(got.status(), got.ok() ? *got : "", TestBytes(size, size));
  };
  return op;
}

// ---- PUTs -----------------------------------------------------------------

Verdict WriteInPieces(OperationContext& c, const std::string& key, const std::string& data) {
  WriteOptions options;
  options.expected_size = data.size();
  auto writer = c.store->OpenWrite(key, options);
  Status status = writer.status();
  if (status.ok()) {
    for (size_t at = 0; at < data.size() && status.ok(); at += 256 * 1024) {
      status = (*writer)->Append(std::string_view(data).substr(at, 256 * 1024));
    }
    if (status.ok()) status = (*writer)->Close().status();
  }
  return CheckWritten(*c.direct, key, data, status);
}

Operation WriteOperation(std::string name, Backend backend, size_t size, std::string target, std::string commit) {
  Operation op{std::move(name), backend, std::move(target), std::move(commit), nullptr, nullptr, nullptr};
  op.run = [size](OperationContext& c) { return WriteInPieces(c, c.prefix + "object", TestBytes(size, 7)); };
  return op;
}

// ---- List and delete --------------------------------------------------------

std::string ListedKey(const OperationContext& c, int i) {
  char name[32];
  std::snprintf(name, sizeof name, "list/item-%03d", i);
  return c.fixed_prefix + name;
}

Operation ListOperation() {
  Operation op{"list", Backend::kS3, R"("method": "GET", "query": "list-type=2")", "", nullptr, nullptr, nullptr};
  op.prepare = [](OperationContext& c) {
    for (int i = 0; i < kListedObjects; ++i) SPOOL_RETURN_IF_ERROR(WriteAll(*c.direct, ListedKey(c, i), "x").status());
    return OkStatus();
  };
  op.run = [](OperationContext& c) {
    ListOptions options;
    options.prefix = c.fixed_prefix + "list/";
    options.max_keys = 10;
    auto listed = ListAll(*c.store, options);
    Verdict verdict{listed.status(), ""};
    if (listed.ok()) {
      std::vector<std::string> keys;
      for (const auto& object : listed->objects) keys.push_back(object.key);
      std::vector<std::string> expected;
      for (int i = 0; i < kListedObjects; ++i) expected.push_back(ListedKey(c, i));
      if (keys != expected) verdict.violation = "listed " + std::to_string(keys.size()) + " keys, not the 25 there are";
    }
    return verdict;
  };
  return op;
}

Operation DeleteOperation() {
  Operation op{"batch delete", Backend::kS3, R"("method": "POST", "query": "delete")", "", nullptr, nullptr,
               nullptr};
  op.setup = [](OperationContext& c) {
    for (int i = 0; i < kDeletedObjects; ++i) {
      SPOOL_RETURN_IF_ERROR(WriteAll(*c.direct, c.prefix + "d" + std::to_string(i), "y").status());
    }
    return OkStatus();
  };
  op.run = [](OperationContext& c) {
    std::vector<std::string> keys;
    for (int i = 0; i < kDeletedObjects; ++i) keys.push_back(c.prefix + "d" + std::to_string(i));
    auto failures = c.store->DeleteMany(keys);
    Verdict verdict{failures.status(), ""};
    if (verdict.status.ok() && !failures->empty()) {
      verdict.status = failures->front().status;
      if (verdict.status.ok()) verdict.violation = "a delete failure without an error";
    }
    ListOptions options;
    options.prefix = c.prefix;
    auto left = ListAll(*c.direct, options);
    if (!left.ok()) verdict.violation = "cannot list: " + left.status().ToString();
    else if (verdict.status.ok() && !left->objects.empty())
      verdict.violation = std::to_string(left->objects.size()) + " objects survived a successful delete";
    return verdict;
  };
  return op;
}

// ---- Loader -------------------------------------------------------------------

std::string Record(int shard, int i) {
  return "shard " + std::to_string(shard) + " record " + std::to_string(i) + " " +
         TestBytes(1000 + (i * 37) % 2000, shard * 1000 + i);
}

std::string ShardKey(const OperationContext& c, int shard) {
  return c.fixed_prefix + "dataset/train-0000" + std::to_string(shard) + ".tfrecord";
}

Operation LoaderOperation() {
  Operation op{"loader epoch", Backend::kS3, R"("method": "GET", "query": "^$")", "", nullptr, nullptr, nullptr};
  op.prepare = [](OperationContext& c) {
    for (int shard = 0; shard < kShards; ++shard) {
      SPOOL_ASSIGN_OR_RETURN(auto writer, records::RecordWriter::Open(*c.direct, ShardKey(c, shard)));
      for (int i = 0; i < kRecordsPerShard; ++i) SPOOL_RETURN_IF_ERROR(writer->Write(Record(shard, i)));
      SPOOL_RETURN_IF_ERROR(writer->Close().status());
    }
    return OkStatus();
  };
  op.run = [](OperationContext& c) {
    DataLoaderOptions options;
    options.store = c.store;
    for (int shard = 0; shard < kShards; ++shard) options.inputs.push_back(ShardKey(c, shard));
    options.rank = 0;
    options.world_size = 1;
    options.seed = 11;
    options.batch_size = 16;
    options.shuffle_buffer = 64;
    options.memory_budget = 16 * kMiB;
    options.read_ahead = 256 * 1024;
    options.fetch_chunk = 128 * 1024;
    std::vector<std::string> got;
    Status status;
    auto loader = DataLoader::Open(options);
    if (!loader.ok()) status = loader.status();
    while (status.ok()) {
      auto batch = (*loader)->Next();
      if (!batch.ok()) status = batch.status();
      else if (!*batch) break;
      else {
        for (std::string_view record : (*batch)->records) got.emplace_back(record);
      }
    }
    Verdict verdict{status, ""};
    if (status.ok()) {
      std::vector<std::string> expected;
      for (int shard = 0; shard < kShards; ++shard)
        for (int i = 0; i < kRecordsPerShard; ++i) expected.push_back(Record(shard, i));
      std::sort(expected.begin(), expected.end());
      std::sort(got.begin(), got.end());
      if (got != expected) {
        verdict.violation = "the epoch delivered " + std::to_string(got.size()) + " records, not exactly the " +
                            std::to_string(expected.size()) + " of the dataset";
      }
    }
    return verdict;
  };
  return op;
}

// ---- Checkpoints --------------------------------------------------------------

std::map<std::string, std::string> CheckpointFiles() {
  return {{"model/weights.bin", TestBytes(6 * kMiB, 1)},  // multipart on S3
          {"optimizer.bin", TestBytes(200 * 1024, 2)},
          {"config.json", R"({"layers": 4})"}};
}

CheckpointSource SourceOf(const std::map<std::string, std::string>& files) {
  CheckpointSource source;
  for (const auto& [path, bytes] : files) source.AddBuffer(path, bytes);
  return source;
}


Operation SaveOperation() {
  Operation op{"checkpoint save", Backend::kS3, R"("method": "PUT")",
               R"("method": "PUT", "path": "MANIFEST\\.json$")", nullptr, nullptr, nullptr};
  op.run = [](OperationContext& c) {
    const auto files = CheckpointFiles();
    Verdict verdict;
    {
      CheckpointManager manager(c.store, c.prefix + "ckpt");
      verdict.status = manager.Save(1, SourceOf(files)).status();
    }
    CheckpointManager check(c.direct, c.prefix + "ckpt");
    auto latest = check.Latest();
    if (!latest.ok()) {
      verdict.violation = "cannot read the checkpoints back: " + latest.status().ToString();
    } else if (!*latest) {
      if (verdict.status.ok()) verdict.violation = "reported saved but no checkpoint is committed";
    } else {
      auto restored = check.RestoreLatest(c.scratch / "check");
      if (!restored.ok()) verdict.violation = "a committed checkpoint does not restore: " + restored.status().ToString();
      else if (test_support::ReadTree(c.scratch / "check") != files) verdict.violation = "a committed checkpoint holds other bytes";
      else if (!verdict.status.ok()) verdict.violation = "a failed save left a committed checkpoint";
    }
    return verdict;
  };
  return op;
}

Operation RestoreOperation() {
  Operation op{"checkpoint restore", Backend::kS3, R"("method": "GET", "query": "^$")", "", nullptr, nullptr,
               nullptr};
  op.prepare = [](OperationContext& c) {
    CheckpointManager manager(c.direct, c.fixed_prefix + "ckpt");
    return manager.Save(7, SourceOf(CheckpointFiles())).status();
  };
  op.setup = [](OperationContext& c) {
    std::filesystem::create_directories(c.scratch / "restore");
    std::ofstream(c.scratch / "restore" / "old.txt") << "previous";
    return OkStatus();
  };
  op.run = [](OperationContext& c) {
    CheckpointManager manager(c.store, c.fixed_prefix + "ckpt");
    // The target holds other files: replacing it is asked for, and a failed
    // restore must still leave it as it was.
    Verdict verdict{manager.RestoreLatest(c.scratch / "restore", ExistingFolder::kReplace).status(), ""};
    const auto now = test_support::ReadTree(c.scratch / "restore");
    if (verdict.status.ok() && now != CheckpointFiles()) {
      verdict.violation = "the restored folder differs from the checkpoint";
    } else if (!verdict.status.ok() && now != std::map<std::string, std::string>{{"old.txt", "previous"}}) {
      verdict.violation = "a failed restore changed the target folder";
    }
    return verdict;
  };
  return op;
}

}  // namespace

std::string TestBytes(size_t size, uint64_t seed) {
  std::mt19937_64 random(seed * 0x9E3779B97F4A7C15ull + 1);
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t word = random();
    std::memcpy(bytes.data() + i, &word, std::min<size_t>(8, size - i));
  }
  return bytes;
}

const std::vector<Operation>& Operations() {
  static const std::vector<Operation> operations = {
      ReadOperation("single GET", kSmallObject),
      ReadOperation("parallel ranged GET", kLargeObject),
      WriteOperation("single PUT", Backend::kS3, kSmallObject, R"("method": "PUT")", ""),
      WriteOperation("multipart PUT", Backend::kS3, kLargeObject, R"("method": "PUT", "query": "partNumber=2")",
                     R"("method": "POST", "query": "uploadId=")"),
      WriteOperation("resumable upload (GCS)", Backend::kGcs, kResumableObject, R"("method": "PUT")",
                     R"("method": "PUT", "final_chunk": true)"),
      ListOperation(),
      DeleteOperation(),
      LoaderOperation(),
      SaveOperation(),
      RestoreOperation(),
  };
  return operations;
}

}  // namespace spool::testing
