// The C++ side of spool/map_dataset.py (spool.torch.RecordMapDataset):
// which shards the inputs name and where each record starts (_index_records),
// and batched reads of records by position (_RecordFetcher).
//
// Both release the GIL for every request. A fetcher is used by one Python
// thread at a time (a mutex serialises the rest). Fork: a fetcher opened
// before fork() is never used or torn down in the child (process.h); the
// Python side makes a new one in each process.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.h"
#include "metrics.h"
#include "process.h"
#include "spool/core/parallel_for.h"
#include "spool/core/storage/explained_reads.h"
#include "spool/records/compression.h"
#include "spool/records/dataset.h"
#include "spool/records/loader/shard_cache.h"
#include "spool/records/record_fetch.h"
#include "spool/records/record_index.h"

namespace py = pybind11;

namespace spool::python {
namespace {

// Requests in flight while indexing or opening shards.
constexpr int kOpenConcurrency = 16;

struct IndexedShard {
  std::shared_ptr<ObjectStore> store;
  records::DatasetShard shard;
  std::string url;
  std::string version;  // what the index describes
  records::RecordIndex index;
};

// The error for a shard that is no longer the version the dataset indexed
// (`now` says what it is instead).
Status ChangedSinceOpened(const std::string& url, const std::string& version, const std::string& now) {
  return DataLossError(url + " changed since the dataset was opened (version " + version + "; " + now +
                       "): open the dataset again");
}

// The shard's index: the index file the expansion found, else "<shard>.idx"
// if it exists, else built by reading the shard once (and written as
// "<shard>.idx" when `write_index`). Checked against the shard's size and
// the manifest's record count.
Status IndexShard(IndexedShard& indexed, bool write_index) {
  ObjectStore& store = *indexed.store;
  records::DatasetShard& shard = indexed.shard;
  if (records::CompressionFromExtension(shard.key) != records::Compression::kNone) {
    return InvalidArgumentError(
        indexed.url + " is " + std::string(records::CompressionName(records::CompressionFromExtension(shard.key))) +
        "-compressed: random access needs uncompressed shards (write them with compression=\"none\"), or stream "
        "compressed ones with spool.torch.StreamingDataset");
  }
  // The version the dataset reads: a shard replaced later is refused, even
  // by one of the same size (whose records would pass their CRCs).
  SPOOL_ASSIGN_OR_RETURN(ObjectInfo info, store.Stat(shard.key));
  if (shard.size && *shard.size != info.size) {
    return DataLossError(indexed.url + " is " + std::to_string(info.size) + " bytes but " +
                         (shard.records ? "its dataset manifest says " + std::to_string(*shard.size) +
                                              "; the shard changed: rewrite the dataset or its manifest"
                                        : "it was " + std::to_string(*shard.size) +
                                              " when listed; it is being rewritten: open the dataset again"));
  }
  shard.size = info.size;
  indexed.version = info.version;
  const bool known = !shard.index_key.empty();
  const std::string index_key = known ? shard.index_key : records::IndexKeyFor(shard.key);
  Result<records::RecordIndex> index = records::RecordIndex::Load(store, index_key, shard.size);
  if (!index.ok() && !known && index.status().code() == StatusCode::kNotFound) {
    index = records::RecordIndex::Build(store, shard.key);
    if (index.ok() && write_index) SPOOL_RETURN_IF_ERROR(WriteAll(store, index_key, index->Serialize()).status());
  }
  SPOOL_RETURN_IF_ERROR(index.status());
  if (shard.records && *shard.records != index->size()) {
    return DataLossError("the dataset manifest says " + indexed.url + " has " + std::to_string(*shard.records) +
                         " records but its index has " + std::to_string(index->size()) +
                         "; rebuild the index (spool records index) or the manifest (spool records manifest)");
  }
  indexed.index = std::move(*index);
  return OkStatus();
}

// [(shard URL, version, uint64 array of its record boundaries: record i is
// [b[i], b[i+1]))] for the shards `inputs` name, in the loader's order,
// each shard once.
py::list IndexRecords(const std::vector<std::string>& inputs, bool write_index) {
  std::vector<IndexedShard> shards;
  {
    py::gil_scoped_release release;
    std::set<std::string> seen;
    for (const std::string& input : inputs) {
      StoreLocation location = Unwrap(OpenLocation(input));
      records::ExpandedInput expanded = Unwrap(records::ExpandInput(*location.store, location.key));
      for (records::DatasetShard& shard : expanded.shards) {
        std::string url = location.store->Describe(shard.key);
        if (!seen.insert(url).second) continue;
        shards.push_back(IndexedShard{location.store, std::move(shard), std::move(url), {}, {}});
      }
    }
    ThrowIfError(ParallelFor(DefaultExecutor(), shards.size(), kOpenConcurrency,
                             [&](size_t i) { return IndexShard(shards[i], write_index); }));
  }
  py::list out;
  for (const IndexedShard& shard : shards) {
    const auto& entries = shard.index.entries();
    py::array_t<uint64_t> bounds(static_cast<py::ssize_t>(entries.size() + 1));
    uint64_t* data = bounds.mutable_data();
    data[0] = entries.empty() ? 0 : entries.front().offset;
    for (size_t i = 0; i < entries.size(); ++i) data[i + 1] = entries[i].offset + entries[i].size;
    out.append(py::make_tuple(shard.url, shard.version, std::move(bounds)));
  }
  return out;
}

// Reads records of a fixed list of shards by (shard, offset, size), a batch
// in coalesced ranged reads (records/record_fetch.h). Shards are opened on
// first use, through stores that count into this fetcher's counters. With a
// cache folder (the loader's loader::ShardCache, shared by every process of
// the node), a shard is fetched whole into it at its first use and read from
// the local file; the access order is random, so eviction is LRU. An open
// shard stays open (an evicted file is read until the fetcher closes).
class RecordFetcher {
 public:
  RecordFetcher(std::vector<std::string> urls, std::vector<std::string> versions, std::vector<uint64_t> sizes,
                uint64_t max_gap, uint64_t max_span, int concurrency, std::string cache_dir = "",
                uint64_t cache_limit = 0)
      : state_(std::make_unique<State>()) {
    if (urls.size() != sizes.size() || urls.size() != versions.size()) {
      throw StatusError(InvalidArgumentError("one version and size per shard URL"));
    }
    state_->urls = std::move(urls);
    state_->versions = std::move(versions);
    state_->sizes = std::move(sizes);
    state_->locations.resize(state_->urls.size());
    state_->objects.resize(state_->urls.size());
    state_->sources.resize(state_->urls.size());
    for (size_t i = 0; i < state_->urls.size(); ++i) state_->sources[i].name = state_->urls[i];
    state_->options.max_gap = max_gap;
    state_->options.max_span = max_span;
    state_->options.concurrency = concurrency;
    state_->store_options.counters = counters_;
    state_->cache_options = Unwrap(loader::ResolveShardCacheOptions(std::move(cache_dir), cache_limit));
    state_->cache_options.policy = loader::CachePolicy::kLru;
    state_->cache_options.fetch_ahead = 0;  // no plan to fetch ahead of
  }
  ~RecordFetcher() {
    if (owner_.Forked()) {
      Abandon(std::move(state_));
      return;
    }
    py::gil_scoped_release release;  // closing connections may wait
    state_.reset();
  }

  // The payloads of the records (shards[i], offsets[i], sizes[i]), in order.
  py::list Read(const std::vector<size_t>& shards, const std::vector<uint64_t>& offsets,
                const std::vector<uint64_t>& sizes) {
    owner_.CheckNotForked("a RecordMapDataset's reader");
    if (shards.size() != offsets.size() || shards.size() != sizes.size()) {
      throw StatusError(InvalidArgumentError("one shard, offset and size per record"));
    }
    std::vector<records::RecordRef> refs(shards.size());
    for (size_t i = 0; i < refs.size(); ++i) refs[i] = {shards[i], offsets[i], sizes[i]};
    std::vector<std::string> payloads;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mu_);
      ThrowIfError(OpenShards(refs));
      payloads = Unwrap(records::FetchRecords(state_->sources, refs, state_->options));
    }
    py::list out;
    for (std::string& payload : payloads) {
      out.append(py::bytes(payload));
      std::string().swap(payload);
    }
    return out;
  }

  py::dict Requests() const { return RequestsDict(counters_->Snapshot()); }

  // The shard cache's counts (zeros without a cache).
  py::dict CacheCounters() {
    loader::ShardCacheCounts counts;
    {
      std::lock_guard lock(mu_);
      if (state_->cache) counts = state_->cache->Counts();
    }
    py::dict out;
    out["cache_hits"] = counts.hits;
    out["cache_misses"] = counts.misses;
    out["cache_fetched_bytes"] = counts.fetched_bytes;
    out["cache_evicted_bytes"] = counts.evicted_bytes;
    return out;
  }

 private:
  struct State {
    loader::ShardCacheOptions cache_options;  // dir empty: no cache
    // Made at the first open; declared first so that it outlives the objects
    // read from its folder (members are destroyed in reverse order).
    std::unique_ptr<loader::ShardCache> cache;
    std::vector<std::string> urls;
    std::vector<std::string> versions;  // each shard's version when it was indexed
    std::vector<uint64_t> sizes;        // what each shard's index covers
    std::vector<StoreLocation> locations;
    std::vector<std::unique_ptr<ReadableObject>> objects;
    std::vector<records::FetchSource> sources;  // objects[i] once open
    records::FetchOptions options;
    StoreOptions store_options;
  };

  // Makes the cache over every shard (their stores opened now). With mu_ held.
  Status OpenCache() {
    State& s = *state_;
    auto shards = std::make_shared<std::vector<loader::ShardInfo>>(s.urls.size());
    for (size_t i = 0; i < s.urls.size(); ++i) {
      if (!s.locations[i].store) {
        SPOOL_ASSIGN_OR_RETURN(s.locations[i], OpenLocation(s.urls[i], s.store_options));
      }
      loader::ShardInfo& info = (*shards)[i];
      info.url = s.urls[i];
      info.store = s.locations[i].store;
      info.key = s.locations[i].key;
      info.size = s.sizes[i];
      info.version = s.versions[i];  // a shard rewritten since it was indexed is neither cached nor read
    }
    s.cache = std::make_unique<loader::ShardCache>(s.cache_options, std::move(shards), nullptr);
    return OkStatus();
  }

  // Opens, in parallel, the shards of `refs` not open yet. With mu_ held.
  Status OpenShards(const std::vector<records::RecordRef>& refs) {
    State& s = *state_;
    std::vector<size_t> wanted;
    for (const records::RecordRef& ref : refs) {
      if (ref.object >= s.urls.size()) return InvalidArgumentError("no shard " + std::to_string(ref.object));
      if (!s.objects[ref.object]) wanted.push_back(ref.object);
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    if (!wanted.empty() && !s.cache_options.dir.empty() && !s.cache) SPOOL_RETURN_IF_ERROR(OpenCache());
    return ParallelFor(DefaultExecutor(), wanted.size(), kOpenConcurrency, [&](size_t i) -> Status {
      const size_t shard = wanted[i];
      if (s.cache) {
        // The cached copy is of the version indexed (its name says so) and
        // was checked against the size the index covers; a cache that is
        // off or a failed fetch answers "read from the store".
        if (std::optional<std::string> key = s.cache->Acquire(static_cast<uint32_t>(shard), 0, 0)) {
          Result<std::unique_ptr<ReadableObject>> cached = s.cache->store().OpenRead(*key);
          if (cached.ok() && (*cached)->info().size == s.sizes[shard]) {
            s.sources[shard].object = cached->get();
            s.objects[shard] = std::move(cached).value();
            return OkStatus();
          }
        }
      }
      StoreLocation location = s.locations[shard];
      if (!location.store) {
        SPOOL_ASSIGN_OR_RETURN(location, OpenLocation(s.urls[shard], s.store_options));
      }
      // Opened as indexed, with no request where the store can pin its
      // reads to that version instead (S3's ETag, GCS's generation; shards
      // of at most one part): each DataLoader worker opens every shard it
      // reads, so a HEAD each would double a small batch's requests. A
      // store that opens with a request (local files, larger shards)
      // reports the version now.
      ObjectInfo indexed;
      indexed.key = location.key;
      indexed.size = s.sizes[shard];
      indexed.version = s.versions[shard];
      SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> opened, location.store->OpenListed(indexed));
      if (opened->info().version != s.versions[shard] || opened->info().size != s.sizes[shard]) {
        return ChangedSinceOpened(s.urls[shard], s.versions[shard], "now version " + opened->info().version);
      }
      auto object = std::make_unique<ExplainedReads>(
          std::move(opened), [url = s.urls[shard], version = s.versions[shard]](const Status& read) {
            if (read.code() == StatusCode::kNotFound) {
              return NotFoundError(url +
                                   " was deleted after the dataset was opened: restore it or open the dataset "
                                   "again");
            }
            return IsChangedSinceOpened(read) ? ChangedSinceOpened(url, version, read.message()) : read;
          });
      s.sources[shard].object = object.get();
      s.objects[shard] = std::move(object);
      s.locations[shard] = std::move(location);
      return OkStatus();
    });
  }

  ProcessOwner owner_;
  std::shared_ptr<RequestCounters> counters_ = std::make_shared<RequestCounters>();
  std::mutex mu_;
  std::unique_ptr<State> state_;
};

}  // namespace

void RegisterRecordMap(py::module_& m) {
  m.def("_index_records", &IndexRecords, py::arg("inputs"), py::arg("write_index"));
  py::class_<RecordFetcher>(m, "_RecordFetcher")
      .def(py::init<std::vector<std::string>, std::vector<std::string>, std::vector<uint64_t>, uint64_t, uint64_t, int,
                    std::string, uint64_t>(),
           py::arg("urls"), py::arg("versions"), py::arg("sizes"), py::arg("max_gap"), py::arg("max_span"),
           py::arg("concurrency"), py::arg("cache_dir") = "", py::arg("cache_limit") = 0)
      .def("read", &RecordFetcher::Read, py::arg("shards"), py::arg("offsets"), py::arg("sizes"))
      .def("requests", &RecordFetcher::Requests)
      .def("cache_counters", &RecordFetcher::CacheCounters);
}

}  // namespace spool::python
