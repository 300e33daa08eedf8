#include "spool/records/record_fetch.h"

#include <algorithm>
#include <numeric>

#include "spool/core/parallel_for.h"
#include "spool/core/storage/transfer.h"
#include "spool/records/framing.h"

namespace spool::records {
namespace {

// The payload of the record framed at `bytes`, checked against what the
// index said (`ref.size`) and both CRCs.
Result<std::string> Unframe(std::string_view bytes, const RecordRef& ref, const std::string& name) {
  const std::string where = name + " at offset " + std::to_string(ref.offset);
  const std::string advice =
      "; if the shard was rewritten, rebuild its index (spool records index), else the "
      "shard is damaged (spool records verify)";
  const uint64_t length = DecodeFixed64(bytes.data());
  if (DecodeFixed32(bytes.data() + 8) != MaskedCrc(bytes.data(), 8)) {
    return DataLossError("no record header in " + where + " (length CRC mismatch)" + advice);
  }
  if (length != ref.size - kFramingSize) {
    return DataLossError("the record in " + where + " has " + std::to_string(length) +
                         " payload bytes but the index says " + std::to_string(ref.size - kFramingSize) + advice);
  }
  std::string_view payload = bytes.substr(kHeaderSize, length);
  if (DecodeFixed32(bytes.data() + kHeaderSize + length) != MaskedCrc(payload.data(), payload.size())) {
    return DataLossError("the record in " + where + " is damaged (payload CRC mismatch)" + advice);
  }
  return std::string(payload);
}

}  // namespace

std::vector<RangeRead> PlanRangeReads(std::span<const RecordRef> refs, uint64_t max_gap, uint64_t max_span) {
  std::vector<size_t> order(refs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(refs[a].object, refs[a].offset, refs[a].size) <
           std::tie(refs[b].object, refs[b].offset, refs[b].size);
  });
  std::vector<RangeRead> plan;
  for (size_t i : order) {
    const RecordRef& ref = refs[i];
    const uint64_t end = ref.offset + ref.size;
    if (!plan.empty()) {
      RangeRead& last = plan.back();
      const uint64_t last_end = last.offset + last.size;
      const uint64_t merged_end = std::max(last_end, end);
      if (last.object == ref.object && ref.offset <= last_end + max_gap && merged_end - last.offset <= max_span) {
        last.size = merged_end - last.offset;
        last.refs.push_back(i);
        continue;
      }
    }
    plan.push_back(RangeRead{ref.object, ref.offset, ref.size, {i}});
  }
  return plan;
}

Result<std::vector<std::string>> FetchRecords(std::span<const FetchSource> sources, std::span<const RecordRef> refs,
                                              const FetchOptions& options) {
  for (const RecordRef& ref : refs) {
    if (ref.object >= sources.size() || sources[ref.object].object == nullptr) {
      return InvalidArgumentError("a record ref names object " + std::to_string(ref.object) + " of " +
                                  std::to_string(sources.size()) + ", which is not open");
    }
    if (ref.size < kFramingSize || ref.offset > UINT64_MAX - ref.size) {
      return InvalidArgumentError("a record of " + sources[ref.object].name + " has offset " +
                                  std::to_string(ref.offset) + " and size " + std::to_string(ref.size) +
                                  "; a framed record has at least 16 bytes");
    }
  }
  const std::vector<RangeRead> plan = PlanRangeReads(refs, options.max_gap, std::max<uint64_t>(options.max_span, 1));
  std::vector<std::string> out(refs.size());
  Executor& executor = options.executor ? *options.executor : DefaultExecutor();
  TransferOptions transfer;
  transfer.part_size = std::max<uint64_t>(options.max_span, 1);  // one request per range, unless a record is larger
  transfer.concurrency = std::max(options.concurrency, 1);
  transfer.executor = &executor;
  // Each range writes only its own records' slots of `out`.
  auto read_range = [&](size_t r) -> Status {
    const RangeRead& range = plan[r];
    const FetchSource& source = sources[range.object];
    std::string buffer(range.size, '\0');
    SPOOL_ASSIGN_OR_RETURN(size_t got, ReadParallel(*source.object, range.offset, buffer, transfer));
    if (got < range.size) {
      return DataLossError(source.name + " ends at byte " + std::to_string(range.offset + got) +
                           " but its index has a record up to byte " + std::to_string(range.offset + range.size) +
                           "; the shard changed since it was indexed: rebuild its index (spool records index)");
    }
    for (size_t i : range.refs) {
      const RecordRef& ref = refs[i];
      std::string_view bytes = std::string_view(buffer).substr(ref.offset - range.offset, ref.size);
      SPOOL_ASSIGN_OR_RETURN(out[i], Unframe(bytes, ref, source.name));
    }
    return OkStatus();
  };
  SPOOL_RETURN_IF_ERROR(ParallelFor(executor, plan.size(), std::max(options.concurrency, 1), read_range));
  return out;
}

}  // namespace spool::records
