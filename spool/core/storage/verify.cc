#include "spool/core/storage/verify.h"

#include <utility>

#include "spool/core/crc32c.h"

namespace spool {

std::optional<StoredDigest> ReadChecksum(const ObjectInfo& info) {
  if (info.crc32c) {
    return StoredDigest{DigestAlgorithm::kCrc32c, crc32c::ToBase64(*info.crc32c),
                        info.crc32c_from_uploader ? "uploader" : "store"};
  }
  return info.digest;
}

std::string DescribeSource(const StoredDigest& checksum) {
  if (checksum.source == "uploader") return "stored by spool's uploader";
  if (checksum.source == "store") return "kept by the store";
  if (checksum.source == "ETag") return "single-part ETag";
  return "the server's " + checksum.source;
}

std::string DescribeChecksum(const StoredDigest& checksum) {
  return std::string(DigestName(checksum.algorithm)) + " (" + DescribeSource(checksum) + ")";
}

ChecksumVerifier::ChecksumVerifier(StoredDigest expected, std::string url)
    : expected_(std::move(expected)), url_(std::move(url)), hasher_(expected_.algorithm) {}

Status ChecksumVerifier::Finish(std::string_view consequence) {
  const std::string actual = hasher_.Finish();
  const std::optional<std::string> wanted = Base64Decode(expected_.base64);
  if (wanted && *wanted == actual) return OkStatus();
  const DigestAlgorithm algorithm = expected_.algorithm;
  const std::string expected_text = wanted ? FormatDigest(algorithm, *wanted) : expected_.base64;
  return DataLossError(url_ + ": the bytes read have " + std::string(DigestDisplayName(algorithm)) + " " +
                       FormatDigest(algorithm, actual) + " but the object's is " + expected_text + " (" +
                       DescribeSource(expected_) + "); " + std::string(consequence) + ", read it again");
}

Status VerifyWholeObject(const ObjectInfo& info, std::string_view url, std::span<const char> bytes) {
  std::optional<StoredDigest> expected = ReadChecksum(info);
  if (!expected) return OkStatus();
  ChecksumVerifier verifier(std::move(*expected), std::string(url));
  verifier.Update(bytes.data(), bytes.size());
  return verifier.Finish();
}

}  // namespace spool
