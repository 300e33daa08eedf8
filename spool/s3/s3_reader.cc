#include "spool/s3/s3_reader.h"

#include <algorithm>

#include "spool/core/parallel_for.h"
#include "spool/core/storage/verify.h"

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
    // A whole object: checked against its CRC32C, else its other checksum.
    if (offset == 0 && wanted == info_.size) SPOOL_RETURN_IF_ERROR(VerifyWholeObject(info_, Url(), target));
    return wanted;
  }

  bool verifies_whole_reads() const override { return true; }

 private:
  Status ReadRange(uint64_t offset, std::span<char> target) {
    GetOptions options;
    options.offset = offset;
    options.length = target.size();
    options.if_match = info_.version;
    // Opened from a listing, the checksums are not known yet: a GET of the
    // whole object asks for them and checks the bytes against them.
    const bool whole = offset == 0 && target.size() == info_.size;
    options.want_checksum = whole && !info_.crc32c && !info_.digest;
    options.whole_object = whole;
    SPOOL_ASSIGN_OR_RETURN(GetResult got, client_->GetObject(info_.key, options, target));
    if (got.bytes != target.size()) {
      return FailedPreconditionError(client_->Describe(info_.key) + " is shorter than when it was opened (byte " +
                                     std::to_string(offset + got.bytes) + "); open it again");
    }
    if (options.want_checksum) {
      ObjectInfo answered = info_;
      answered.crc32c = got.crc32c;
      answered.crc32c_from_uploader = got.crc32c_from_uploader;
      answered.digest = std::move(got.digest);
      return VerifyWholeObject(answered, Url(), target);
    }
    return OkStatus();
  }

  std::string Url() const { return client_->Describe(info_.key); }

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
