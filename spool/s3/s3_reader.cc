#include "spool/s3/s3_reader.h"

#include <algorithm>

#include "spool/core/crc32c.h"
#include "spool/core/parallel_for.h"

namespace spool::s3 {
namespace {

class S3Reader : public ReadableObject {
 public:
  S3Reader(std::shared_ptr<S3Client> client, ObjectInfo info, Executor& executor)
      : client_(std::move(client)), info_(std::move(info)), executor_(executor) {}

  const ObjectInfo& info() const override { return info_; }

  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
    if (offset > info_.size) {
      return OutOfRangeError("read of " + client_->Describe(info_.key) + " at byte " + std::to_string(offset) +
                             " is past its end (" + std::to_string(info_.size) + " bytes)");
    }
    const size_t wanted = static_cast<size_t>(std::min<uint64_t>(buffer.size(), info_.size - offset));
    if (wanted == 0) return size_t{0};
    std::span<char> target = buffer.first(wanted);
    const uint64_t part = client_->read_part_size();
    Status status = target.size() <= part ? ReadRange(offset, target) : ReadRangesInParallel(offset, target, part);
    SPOOL_RETURN_IF_ERROR(status);
    if (offset == 0 && wanted == info_.size && info_.crc32c) SPOOL_RETURN_IF_ERROR(CheckCrc32c(target, *info_.crc32c));
    return wanted;
  }

 private:
  Status ReadRange(uint64_t offset, std::span<char> target) {
    GetOptions options;
    options.offset = offset;
    options.length = target.size();
    options.if_match = info_.version;
    // Opened from a listing, the CRC32C is not known yet: a GET of the whole
    // object asks for it and checks the bytes against it.
    const bool whole = offset == 0 && target.size() == info_.size;
    options.want_checksum = whole && !info_.crc32c;
    options.whole_object = whole;
    SPOOL_ASSIGN_OR_RETURN(GetResult got, client_->GetObject(info_.key, options, target));
    if (got.bytes != target.size()) {
      return FailedPreconditionError(client_->Describe(info_.key) + " is shorter than when it was opened (byte " +
                                     std::to_string(offset + got.bytes) + "); open it again");
    }
    if (options.want_checksum && got.crc32c) return CheckCrc32c(target, *got.crc32c);
    return OkStatus();
  }

  Status CheckCrc32c(std::span<const char> bytes, uint32_t expected) const {
    const uint32_t actual = crc32c::Value(bytes.data(), bytes.size());
    if (actual == expected) return OkStatus();
    return DataLossError(client_->Describe(info_.key) + ": the bytes read have CRC32C " + crc32c::ToHex(actual) +
                         " but the object's is " + crc32c::ToHex(expected) + (info_.crc32c_from_uploader ? " (stored by its uploader)" : "") +
                         "; the data was corrupted in transit, read it again");
  }

  // `concurrency` workers take ranges of `part` bytes in order until none is left.
  Status ReadRangesInParallel(uint64_t offset, std::span<char> target, uint64_t part) {
    const size_t ranges = static_cast<size_t>((target.size() + part - 1) / part);
    return ParallelFor(executor_, ranges, client_->config().concurrency, [&](size_t i) {
      const size_t begin = i * part;
      const size_t size = std::min<size_t>(part, target.size() - begin);
      return ReadRange(offset + begin, target.subspan(begin, size));
    });
  }

  const std::shared_ptr<S3Client> client_;
  const ObjectInfo info_;
  Executor& executor_;
};

}  // namespace

std::unique_ptr<ReadableObject> MakeS3Reader(std::shared_ptr<S3Client> client, ObjectInfo info, Executor& executor) {
  return std::make_unique<S3Reader>(std::move(client), std::move(info), executor);
}

}  // namespace spool::s3
