// Random access to the records of uncompressed TFRecord objects, by the
// offsets and sizes an index gives (record_index.h): what a map-style
// dataset needs to fetch a batch of records in a few ranged reads instead of
// one request per record.
//
// FetchRecords groups the records asked for by object and sorts them;
// neighbours are merged into one ranged read when the gap between them is at
// most `max_gap` bytes (read and dropped: on an object store a request costs
// more than that much transfer) and the merged read stays within `max_span`
// bytes (a single record larger than that is read alone, in parallel parts).
// The reads run in parallel, at most `concurrency` at once, and every
// record's length and both CRCs are checked against the bytes read.
//
// Thread-safety: stateless; the objects are read from several threads at
// once, which every ReadableObject allows. Errors: DataLoss naming the object
// and offset when the bytes there are not the record the index describes (a
// stale index or a damaged shard), the store's error when a read fails,
// InvalidArgument for a ref that names no object or a size below 16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "spool/core/executor.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool::records {

// One record to fetch.
struct RecordRef {
  size_t object = 0;    // which of the sources given to FetchRecords
  uint64_t offset = 0;  // where its framing starts
  uint64_t size = 0;    // framed size, 16 + payload (an IndexEntry's size)
};

// An object records are fetched from. Not owned.
struct FetchSource {
  ReadableObject* object = nullptr;
  std::string name;  // its URL, for messages
};

struct FetchOptions {
  uint64_t max_gap = 1 << 20;    // bytes between two records still read as one range
  uint64_t max_span = 16 << 20;  // bytes one ranged read may cover
  int concurrency = 16;          // ranged reads in flight
  Executor* executor = nullptr;  // default: DefaultExecutor()
};

// One ranged read of a plan: [offset, offset + size) of `object`, holding
// the records refs[i] for each i in `refs` (a record asked for twice is
// listed twice).
struct RangeRead {
  size_t object = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::vector<size_t> refs;
};

// The ranged reads FetchRecords makes for `refs`, in (object, offset) order.
std::vector<RangeRead> PlanRangeReads(std::span<const RecordRef> refs, uint64_t max_gap, uint64_t max_span);

// The payloads of `refs`, in the order asked. sources[ref.object].object
// must be set for every ref.
Result<std::vector<std::string>> FetchRecords(std::span<const FetchSource> sources, std::span<const RecordRef> refs,
                                              const FetchOptions& options = {});

}  // namespace spool::records
