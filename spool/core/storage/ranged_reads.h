// Ranged reads: the one place where a read of many bytes is split into
// parts that are requested separately, and the one knob struct for it.
//
// Contract:
// - A store's readers split every ReadAt with their RangedReads (the S3 and
//   GCS readers: one ranged GET per part, at most parts_in_flight at once);
//   ReadableObject::ranged_reads() says which split that is.
// - Whole-object transfers (core/storage/transfer.h) and checkpoint restore
//   call ReadAt with at most one part at a time and hold at most their own
//   parts in flight, so a transfer part is exactly one request: a read is
//   split once, never again inside the reader.
// - A part read that gets fewer bytes than the range covers fails with
//   ShortReadError (DataLoss, "read it again") on every store.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "spool/core/executor.h"
#include "spool/core/status.h"

namespace spool {

// How a large read is split: parts of part_size bytes (the last one
// shorter), at most parts_in_flight requested at once. Values below 1 count
// as 1. The defaults are the AWS CLI's 8 MiB parts and 8 connections, where
// loopback and LAN throughput stops growing (docs/performance.md).
struct RangedReads {
  uint64_t part_size = 8ull << 20;
  int parts_in_flight = 8;
};

// The number of parts [offset, offset + length) is split into.
uint64_t PartCount(const RangedReads& reads, uint64_t length);

// Calls read_part(part_offset, part_buffer) for each consecutive part of
// [offset, offset + buffer.size()), each part_buffer a slice of `buffer`.
// One part runs on the calling thread; more run through ParallelFor
// (core/parallel_for.h) with at most parts_in_flight at once, the caller
// being one of the workers. Returns the first error (then no new part
// starts) and waits for every started part. read_part is called from
// several threads at once and must fill its whole part or fail.
Status ReadInParts(Executor& executor, const RangedReads& reads, uint64_t offset, std::span<char> buffer,
                   const std::function<Status(uint64_t part_offset, std::span<char> part)>& read_part);

// The error for a range that came back shorter than asked (the connection
// ended early, or the object is shorter than when it was opened): DataLoss,
// naming the object's URL and the byte, and saying to read again.
Status ShortReadError(std::string_view url, uint64_t offset, uint64_t got, uint64_t wanted);

// The errors of a read pinned by the size it was opened at (a dataset
// manifest gives no version), each FailedPrecondition naming the object and
// saying to open it again: the server answered for an object of `size_now`
// bytes; a range inside the size opened at was past its end (a 416); an
// answer was of another version than the first answer of the same open.
Status SizeChangedError(std::string_view url, uint64_t size_now, uint64_t size_opened);
Status ShorterThanOpenedError(std::string_view url, uint64_t size_opened);
Status VersionChangedError(std::string_view url, std::string_view first_version);

}  // namespace spool
