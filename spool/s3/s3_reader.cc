#include "spool/s3/s3_reader.h"

#include <algorithm>

#include "spool/core/storage/ranged_reads.h"
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
    SPOOL_RETURN_IF_ERROR(ReadInParts(executor_, ranged_reads(), offset, target,
                                      [this](uint64_t at, std::span<char> part) { return ReadRange(at, part); }));
    // A whole object: checked against its CRC32C, else its other checksum.
    if (offset == 0 && wanted == info_.size) SPOOL_RETURN_IF_ERROR(VerifyWholeObject(info_, Url(), target));
    return wanted;
  }

  bool verifies_whole_reads() const override { return true; }
  RangedReads ranged_reads() const override { return RangedReadsOf(client_->config()); }

 private:
  Status ReadRange(uint64_t offset, std::span<char> target) {
    GetOptions options;
    options.offset = offset;
    options.length = target.size();
    options.if_match = info_.version;
    // Opened from a manifest that gave the size but no ETag: the size pins it.
    if (info_.version.empty()) options.object_size = info_.size;
    // Opened from a listing, the checksums are not known yet: a GET of the
    // whole object asks for them and checks the bytes against them.
    const bool whole = offset == 0 && target.size() == info_.size;
    options.want_checksum = whole && !info_.crc32c && !info_.digest;
    options.whole_object = whole;
    SPOOL_ASSIGN_OR_RETURN(GetResult got, client_->GetObject(info_.key, options, target));
    if (got.bytes != target.size()) return ShortReadError(Url(), offset, got.bytes, target.size());
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

  const std::shared_ptr<S3Client> client_;
  const ObjectInfo info_;
  Executor& executor_;
};

}  // namespace

std::unique_ptr<ReadableObject> MakeS3Reader(std::shared_ptr<S3Client> client, ObjectInfo info, Executor& executor) {
  return std::make_unique<S3Reader>(std::move(client), std::move(info), executor);
}

}  // namespace spool::s3
