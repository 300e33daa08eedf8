// The DataLoader for spool/loader.py: batches as lists of bytes, of
// read-only NumPy uint8 arrays or memoryviews over the loader's pooled
// record blocks (no copy: a capsule holding the batch's RecordList is each
// array's base, so the blocks live while any record of the batch is
// referenced and go back to the pool after), or as a dict of NumPy arrays
// decoded by a feature spec (examples.h). Next(),
// Resume() and Close() release the GIL while they wait. One Python thread
// at a time uses a loader (loader.py documents it). Opened before fork(), a
// loader cannot be used in the child and is left to the parent there
// (process.h): each torch DataLoader worker opens its own.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "metrics.h"
#include "examples.h"
#include "process.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/loader/worker_env.h"

namespace py = pybind11;

namespace spool::python {
using loader::BadShardPolicy;
using loader::Batch;
using loader::DataLoader;
using loader::DataLoaderOptions;
using loader::LoaderCounters;
using loader::LoaderState;
using loader::ResolveWorker;
using loader::WorkerIdentity;

namespace {

enum class RecordType { kBytes, kMemoryview, kNumpy };

RecordType ParseRecordType(const std::string& text) {
  if (text == "bytes") return RecordType::kBytes;
  if (text == "memoryview") return RecordType::kMemoryview;
  if (text == "numpy") return RecordType::kNumpy;
  throw StatusError(InvalidArgumentError("record_type '" + text + "' is not one of bytes, memoryview, numpy"));
}

// The batch's records as Python objects: copies (bytes), or views whose
// base owns the records' block references.
py::list RecordObjects(loader::RecordList records, RecordType type) {
  py::list out(records.size());
  if (type == RecordType::kBytes) {
    for (size_t i = 0; i < records.size(); ++i) {
      out[i] = py::bytes(records[i].data(), records[i].size());
    }
    return out;
  }
  auto* held = new loader::RecordList(std::move(records));
  py::capsule owner(held, [](void* list) { delete static_cast<loader::RecordList*>(list); });
  for (size_t i = 0; i < held->size(); ++i) {
    const std::string_view record = (*held)[i];
    py::array_t<uint8_t> array({static_cast<py::ssize_t>(record.size())}, {static_cast<py::ssize_t>(1)},
                               reinterpret_cast<const uint8_t*>(record.data()), owner);
    py::detail::array_proxy(array.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    if (type == RecordType::kNumpy) {
      out[i] = std::move(array);
    } else {
      out[i] = py::memoryview(array);
    }
  }
  return out;
}

BadShardPolicy ParseBadShards(const std::string& text) {
  if (text == "fail") return BadShardPolicy::kFail;
  if (text == "skip") return BadShardPolicy::kSkip;
  throw StatusError(InvalidArgumentError("bad_shards '" + text + "' is not one of fail, skip"));
}

py::dict PoolDict(uint64_t blocks_made, uint64_t bytes_live, uint64_t bytes_idle) {
  py::dict out;
  out["blocks_made"] = blocks_made;
  out["bytes_live"] = bytes_live;
  out["bytes_idle"] = bytes_idle;
  return out;
}

// A loader's record pool, kept by a StreamingDataset for the loader of its
// next epoch (DataLoaderOptions::record_pool), which then reuses its blocks.
// Never used in a forked child (a loader given it there fails; destroyed
// there, it is leaked like the loaders).
class SharedRecordPool {
 public:
  explicit SharedRecordPool(std::shared_ptr<records::RecordPool> pool) : pool_(std::move(pool)) {}
  ~SharedRecordPool() {
    if (owner_.Forked()) Abandon(std::move(pool_));
  }
  bool Forked() const { return owner_.Forked(); }
  const std::shared_ptr<records::RecordPool>& Get() const {
    owner_.CheckNotForked("a record pool");
    return pool_;
  }
  // blocks_made (since it was made), bytes_live, bytes_idle.
  py::dict Stats() const {
    const records::RecordPoolStats stats = Get()->stats();
    return PoolDict(stats.blocks_made, stats.bytes_live, stats.bytes_idle);
  }

 private:
  ProcessOwner owner_;
  std::shared_ptr<records::RecordPool> pool_;
};

class Loader {
 public:
  Loader(std::vector<std::string> inputs, uint64_t batch_size, uint64_t seed, bool shuffle, uint64_t shuffle_buffer,
         uint64_t epochs, bool drop_remainder, std::optional<int> rank, std::optional<int> world_size,
         int local_workers, int local_worker, int interleave, uint64_t memory_budget, uint64_t read_ahead,
         int prefetch_batches, const std::string& bad_shards, bool count_records, const py::list& features,
         uint64_t partitions, uint64_t global_batch_size, const std::string& cache_dir, uint64_t cache_limit,
         const std::string& cache_policy, const std::string& record_type, uint64_t fetch_chunk,
         const SharedRecordPool* record_pool, uint64_t start_epoch, uint64_t start_position) {
    specs_ = FeatureSpecsFrom(features);
    record_type_ = ParseRecordType(record_type);
    DataLoaderOptions options;
    options.inputs = std::move(inputs);
    options.batch_size = batch_size;
    options.seed = seed;
    options.shuffle_shards = shuffle;
    options.shuffle_buffer = shuffle ? shuffle_buffer : 0;
    options.epochs = epochs;
    options.drop_remainder = drop_remainder;
    options.rank = rank;
    options.world_size = world_size;
    options.local_workers = local_workers;
    options.local_worker = local_worker;
    options.interleave = interleave;
    options.memory_budget = memory_budget;
    options.read_ahead = read_ahead;
    options.fetch_chunk = fetch_chunk;
    if (record_pool != nullptr) options.record_pool = record_pool->Get();
    options.start_epoch = start_epoch;
    options.start_position = start_position;
    options.prefetch_batches = prefetch_batches;
    options.bad_shard_policy = ParseBadShards(bad_shards);
    options.count_records = count_records;
    options.parse_examples = !specs_.empty();
    options.partitions = partitions;
    options.global_batch_size = global_batch_size;
    options.cache_dir = cache_dir;
    options.cache_limit = cache_limit;
    if (cache_policy == "lru") {
      options.cache_policy = loader::CachePolicy::kLru;
    } else if (cache_policy != "next_use") {
      throw StatusError(InvalidArgumentError("cache_policy '" + cache_policy + "' is not one of next_use, lru"));
    }
    py::gil_scoped_release release;
    loader_ = Unwrap(DataLoader::Open(std::move(options)));
  }
  ~Loader() {
    if (owner_.Forked()) {
      Abandon(std::move(loader_));
    } else {
      Close();
    }
  }

  // (epoch, batch) or None after the last epoch.
  py::object Next() {
    DataLoader& loader = Get();
    Result<std::optional<Batch>> next = [&] {
      py::gil_scoped_release release;
      return loader.Next();
    }();
    std::optional<Batch> batch = Unwrap(std::move(next));
    if (!batch) return py::none();
    if (!specs_.empty()) return py::make_tuple(batch->epoch, DecodeExamples(batch->examples, specs_));
    return py::make_tuple(batch->epoch, RecordObjects(std::move(batch->records), record_type_));
  }

  std::string State() { return Get().State().Encode(); }

  void Resume(const std::string& encoded) {
    DataLoader& loader = Get();
    LoaderState state = Unwrap(LoaderState::Decode(encoded));
    py::gil_scoped_release release;
    ThrowIfError(loader.Resume(state));
  }

  std::string Fingerprint() { return Get().fingerprint(); }

  std::optional<uint64_t> EpochRecords(uint64_t epoch, uint64_t worker) { return Get().EpochRecords(epoch, worker); }

  py::dict Worker() {
    DataLoader& loader = Get();
    const LoaderState state = loader.State();
    py::dict out;
    out["rank"] = loader.worker().rank;
    out["world_size"] = loader.worker().world_size;
    out["source"] = loader.worker().source;
    out["worker"] = state.worker;
    out["workers"] = state.workers;
    return out;
  }

  py::dict Counters() {
    const LoaderCounters c = Get().Counters();
    py::dict out;
    out["records"] = c.records;
    out["bytes"] = c.bytes;
    out["seconds"] = c.seconds;
    out["records_per_second"] = c.records_per_second;
    out["bytes_per_second"] = c.bytes_per_second;
    out["wait_seconds"] = c.wait_seconds;
    out["object_bytes"] = c.object_bytes;
    out["retries"] = c.retries;
    out["throttles"] = c.throttles;
    out["skipped_records"] = c.skipped_records;
    out["skipped_shards"] = c.skipped_shards;
    out["buffered_bytes"] = c.buffered_bytes;
    out["peak_buffered_bytes"] = c.peak_buffered_bytes;
    out["budget_overruns"] = c.budget_overruns;
    out["memory_budget"] = c.memory_budget;
    out["next_seconds"] = HistogramDict(c.next_wait);
    out["cache_hits"] = c.cache_hits;
    out["cache_misses"] = c.cache_misses;
    out["cache_fetched_bytes"] = c.cache_fetched_bytes;
    out["cache_evicted_bytes"] = c.cache_evicted_bytes;
    out["cache_fetch_ahead"] = c.cache_fetch_ahead;
    return out;
  }

  py::dict Requests() { return RequestsDict(Get().Requests()); }

  // The record pool: blocks made, bytes referenced now (by the loader or by
  // records Python still holds) and idle.
  py::dict RecordPool() {
    const LoaderCounters c = Get().Counters();
    return PoolDict(c.record_blocks_made, c.record_bytes_live, c.record_bytes_idle);
  }

  // The pool this loader's records live in, for the loader opened after it;
  // None in a forked child (the pool is the parent's).
  py::object SharedPool() {
    if (owner_.Forked()) return py::none();
    return py::cast(SharedRecordPool(loader_->record_pool()));
  }

  void Close() {
    if (!loader_ || owner_.Forked()) return;
    py::gil_scoped_release release;
    loader_->Close();
  }

 private:
  DataLoader& Get() {
    owner_.CheckNotForked("a DataLoader");
    return *loader_;
  }

  ProcessOwner owner_;
  RecordType record_type_ = RecordType::kBytes;
  std::vector<records::FeatureSpec> specs_;
  std::unique_ptr<DataLoader> loader_;
};

}  // namespace

void RegisterLoader(py::module_& m) {
  py::class_<Loader>(m, "_DataLoader")
      .def(py::init<std::vector<std::string>, uint64_t, uint64_t, bool, uint64_t, uint64_t, bool, std::optional<int>,
                    std::optional<int>, int, int, int, uint64_t, uint64_t, int, const std::string&, bool,
                    const py::list&, uint64_t, uint64_t, const std::string&, uint64_t, const std::string&,
                    const std::string&, uint64_t, const SharedRecordPool*, uint64_t, uint64_t>(),
           py::arg("inputs"), py::arg("batch_size"), py::arg("seed"), py::arg("shuffle"), py::arg("shuffle_buffer"),
           py::arg("epochs"), py::arg("drop_remainder"), py::arg("rank"), py::arg("world_size"),
           py::arg("local_workers"), py::arg("local_worker"), py::arg("interleave"), py::arg("memory_budget"),
           py::arg("read_ahead"), py::arg("prefetch_batches"), py::arg("bad_shards"), py::arg("count_records"),
           py::arg("features"), py::arg("partitions") = 0, py::arg("global_batch_size") = 0, py::arg("cache_dir") = "",
           py::arg("cache_limit") = 0, py::arg("cache_policy") = "next_use", py::arg("record_type") = "bytes",
           py::arg("fetch_chunk") = DataLoaderOptions{}.fetch_chunk, py::arg("record_pool") = nullptr,
           py::arg("start_epoch") = 0, py::arg("start_position") = 0)
      .def("next", &Loader::Next)
      .def("state", &Loader::State)
      .def("resume", &Loader::Resume, py::arg("state"))
      .def("epoch_records", &Loader::EpochRecords, py::arg("epoch"), py::arg("worker"))
      .def("worker", &Loader::Worker)
      .def("fingerprint", &Loader::Fingerprint)
      .def("counters", &Loader::Counters)
      .def("requests", &Loader::Requests)
      .def("record_pool", &Loader::RecordPool)
      .def("shared_record_pool", &Loader::SharedPool)
      .def("close", &Loader::Close);
  py::class_<SharedRecordPool>(m, "_RecordPool")
      .def_property_readonly("forked", &SharedRecordPool::Forked)
      .def("stats", &SharedRecordPool::Stats)
      // Process-local: a pickled (or deep-copied) pool is None.
      .def("__reduce__", [](const SharedRecordPool&) { return py::make_tuple(py::type::of(py::none()), py::tuple()); });
  // The rank and world size a loader given these would use (the launcher's
  // environment fills in what is None): (rank, world_size, source).
  m.def(
      "_resolve_worker",
      [](std::optional<int> rank, std::optional<int> world_size) {
        WorkerIdentity worker = Unwrap(ResolveWorker(rank, world_size, CurrentEnv()));
        return py::make_tuple(worker.rank, worker.world_size, worker.source);
      },
      py::arg("rank"), py::arg("world_size"));
  // The fingerprint a loader over `inputs` would carry in its states
  // (LoaderState::fingerprint): reads each manifest, lists each glob.
  m.def(
      "_inputs_fingerprint",
      [](std::vector<std::string> inputs) {
        DataLoaderOptions options;
        options.inputs = std::move(inputs);
        py::gil_scoped_release release;
        return Unwrap(DataLoader::InputsFingerprint(options));
      },
      py::arg("inputs"));
}

}  // namespace spool::python
