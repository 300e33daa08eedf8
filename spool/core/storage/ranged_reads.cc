#include "spool/core/storage/ranged_reads.h"

#include <algorithm>
#include <string>

#include "spool/core/parallel_for.h"

namespace spool {
namespace {

uint64_t PartSizeOf(const RangedReads& reads) { return std::max<uint64_t>(reads.part_size, 1); }

}  // namespace

uint64_t PartCount(const RangedReads& reads, uint64_t length) {
  const uint64_t part = PartSizeOf(reads);
  return (length + part - 1) / part;
}

Status ReadInParts(Executor& executor, const RangedReads& reads, uint64_t offset, std::span<char> buffer,
                   const std::function<Status(uint64_t part_offset, std::span<char> part)>& read_part) {
  const uint64_t part = PartSizeOf(reads);
  const uint64_t parts = PartCount(reads, buffer.size());
  if (parts <= 1) return buffer.empty() ? OkStatus() : read_part(offset, buffer);
  return ParallelFor(executor, static_cast<size_t>(parts), std::max(reads.parts_in_flight, 1), [&](size_t i) {
    const uint64_t begin = i * part;
    const size_t size = static_cast<size_t>(std::min<uint64_t>(part, buffer.size() - begin));
    return read_part(offset + begin, buffer.subspan(static_cast<size_t>(begin), size));
  });
}

Status ShortReadError(std::string_view url, uint64_t offset, uint64_t got, uint64_t wanted) {
  return DataLossError(
      std::string(url) + ": got " + std::to_string(got) + " of " + std::to_string(wanted) + " bytes at offset " +
      std::to_string(offset) +
      " (the connection ended early, or the object is shorter than when it was opened); read it again");
}

Status SizeChangedError(std::string_view url, uint64_t size_now, uint64_t size_opened) {
  return FailedPreconditionError(std::string(url) + " is " + std::to_string(size_now) + " bytes, not the " +
                                 std::to_string(size_opened) + " it had when opened: it changed since; open it again");
}

Status ShorterThanOpenedError(std::string_view url, uint64_t size_opened) {
  return FailedPreconditionError(std::string(url) + " is shorter than the " + std::to_string(size_opened) +
                                 " bytes it had when opened: it changed since; open it again");
}

Status VersionChangedError(std::string_view url, std::string_view first_version) {
  return FailedPreconditionError(std::string(url) + " changed while it was being read (it was " +
                                 std::string(first_version) + " at its first read); open it again");
}

}  // namespace spool
