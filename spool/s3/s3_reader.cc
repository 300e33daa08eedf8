#include "spool/s3/s3_reader.h"

#include <algorithm>
#include <mutex>

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
    const bool unpinned = info_.version.empty();  // opened from a manifest: a size, no ETag
    options.if_match = unpinned ? Learned() : info_.version;
    if (unpinned) options.object_size = info_.size;
    // Opened from a listing, the checksums are not known yet: a GET of the
    // whole object asks for them and checks the bytes against them.
    const bool whole = offset == 0 && target.size() == info_.size;
    options.want_checksum = whole && !info_.crc32c && !info_.digest;
    options.whole_object = whole;
    SPOOL_ASSIGN_OR_RETURN(GetResult got, client_->GetObject(info_.key, options, target));
    if (unpinned) SPOOL_RETURN_IF_ERROR(Learn(got.etag));
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

  // Opened without an ETag, the first answer's pins the reads after it, as
  // a HEAD's would have: a rewrite of the same size between two reads is
  // then FailedPrecondition too. Reads in flight together may each be a
  // first; one that saw another ETag than the one kept fails.
  std::string Learned() const {
    std::lock_guard lock(mu_);
    return learned_etag_;
  }
  Status Learn(const std::string& etag) {
    std::lock_guard lock(mu_);
    if (learned_etag_.empty()) learned_etag_ = etag;
    if (etag.empty() || etag == learned_etag_) return OkStatus();
    return VersionChangedError(Url(), learned_etag_);
  }

  const std::shared_ptr<S3Client> client_;
  const ObjectInfo info_;
  Executor& executor_;
  mutable std::mutex mu_;
  std::string learned_etag_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<ReadableObject> MakeS3Reader(std::shared_ptr<S3Client> client, ObjectInfo info, Executor& executor) {
  return std::make_unique<S3Reader>(std::move(client), std::move(info), executor);
}

}  // namespace spool::s3
