// Verifying a whole read of an object against the checksum its store keeps:
// its CRC32C (the store's, or the one spool's uploader stored) when it has
// one, else the other checksum ObjectInfo::digest names (an S3 full-object
// x-amz-checksum-*, a single-part ETag's MD5, GCS's md5Hash).
// docs/integrity.md says which read is checked where.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "spool/core/digest.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool {

// The checksum a whole read of the object is verified against: its CRC32C
// (source "uploader" or "store", as ObjectInfo::crc32c_from_uploader says),
// else info.digest; nullopt when it has neither.
std::optional<StoredDigest> ReadChecksum(const ObjectInfo& info);

// Where the checksum came from: "stored by spool's uploader", "kept by the
// store", "the server's x-amz-checksum-sha256", "single-part ETag".
std::string DescribeSource(const StoredDigest& checksum);
// The algorithm and where it came from: "crc32c (stored by spool's
// uploader)", "sha256 (the server's x-amz-checksum-sha256)", "md5
// (single-part ETag)".
std::string DescribeChecksum(const StoredDigest& checksum);

// Checks the bytes of a whole object, fed in order, against one checksum.
// One thread at a time.
class ChecksumVerifier {
 public:
  // `url` names the object in the error.
  ChecksumVerifier(StoredDigest expected, std::string url);
  const StoredDigest& expected() const { return expected_; }
  void Update(const void* data, size_t size) { hasher_.Update(data, size); }
  void Update(std::string_view data) { hasher_.Update(data); }
  // OK when the bytes match. Else DataLoss: "<url>: the bytes read have MD5
  // <hex> but the object's is <hex> (single-part ETag); <consequence>, read
  // it again". The verifier is spent afterwards.
  Status Finish(std::string_view consequence = "the data was corrupted in transit");

 private:
  StoredDigest expected_;
  std::string url_;
  Hasher hasher_;
};

// Checks `bytes`, all of the object, against ReadChecksum(info); OK when it
// has none.
Status VerifyWholeObject(const ObjectInfo& info, std::string_view url, std::span<const char> bytes);

}  // namespace spool
