#include "spool/gcs/gcs_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "spool/core/storage/verify.h"

namespace spool::gcs {

GcsReader::GcsReader(std::shared_ptr<GcsClient> client, ObjectMetadata object, ObjectInfo info,
                     ReaderOptions options)
    : client_(std::move(client)), object_(std::move(object)), info_(std::move(info)), options_(options) {}

Status GcsReader::ReadRange(uint64_t offset, std::span<char> out, std::optional<uint32_t>* whole_crc) const {
  ReadObjectRequest request;
  request.bucket = object_.bucket;
  request.name = object_.name;
  // Generation 0: opened from a dataset manifest, which gives the size only;
  // the first answer's generation then pins the reads after it.
  const bool unpinned = object_.generation == 0;
  if (unpinned) {
    request.object_size = object_.size;
    if (const int64_t learned = learned_generation_.load()) request.if_generation_match = learned;
  } else {
    request.if_generation_match = object_.generation;
  }
  request.offset = offset;
  request.length = out.size();
  size_t written = 0;
  auto result = client_->ReadObject(request, [&](std::string_view data) -> Status {
    if (data.size() > out.size() - written) {
      return InternalError("the service sent more bytes than asked for at offset " + std::to_string(offset));
    }
    std::memcpy(out.data() + written, data.data(), data.size());
    written += data.size();
    return OkStatus();
  });
  if (!result.ok()) return result.status();
  if (unpinned && result->generation != 0) {
    int64_t first = 0;
    if (!learned_generation_.compare_exchange_strong(first, result->generation) && first != result->generation) {
      return VersionChangedError(GcsClient::Url(object_.bucket, object_.name), "generation " + std::to_string(first));
    }
  }
  if (written != out.size()) {
    return ShortReadError(GcsClient::Url(object_.bucket, object_.name), offset, written, out.size());
  }
  if (whole_crc) *whole_crc = result->crc32c;
  return OkStatus();
}

Result<size_t> GcsReader::ReadAt(uint64_t offset, std::span<char> buffer) {
  const uint64_t size = object_.size;
  if (offset > size) {
    return OutOfRangeError(GcsClient::Url(object_.bucket, object_.name) + ": offset " + std::to_string(offset) +
                           " is past the end of the object (" + std::to_string(size) + " bytes)");
  }
  const size_t length = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - offset));
  if (length == 0) return size_t{0};
  std::span<char> out = buffer.first(length);
  const bool whole = offset == 0 && length == size;
  std::optional<uint32_t> expected_crc = object_.crc32c;

  if (PartCount(options_.reads, length) <= 1) {
    std::optional<uint32_t> header_crc;
    SPOOL_RETURN_IF_ERROR(ReadRange(offset, out, &header_crc));
    if (header_crc) expected_crc = header_crc;  // x-goog-hash of the same generation
  } else {
    Executor& executor = options_.executor ? *options_.executor : DefaultExecutor();
    SPOOL_RETURN_IF_ERROR(ReadInParts(executor, options_.reads, offset, out, [this](uint64_t at, std::span<char> part) {
      return ReadRange(at, part, nullptr);
    }));
  }
  if (whole) {
    // Against the CRC32C (every GCS object has one), else the md5Hash.
    ObjectInfo checked = info_;
    checked.crc32c = expected_crc;
    SPOOL_RETURN_IF_ERROR(VerifyWholeObject(checked, GcsClient::Url(object_.bucket, object_.name), out));
  }
  return length;
}

}  // namespace spool::gcs
