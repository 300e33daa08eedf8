// S3's XML documents: the results of ListObjectsV2, the multipart calls,
// DeleteObjects and CopyObject, error bodies, and the two request bodies
// spool sends (CompleteMultipartUpload, Delete). Parsed with libxml2 (network
// access and entity expansion off); elements are matched by local name so
// documents with or without S3's namespace both parse.
//
// Pure functions, thread-safe. A malformed document is InvalidArgument that
// quotes the start of the text. Servers that leave elements empty (Ceph RGW's
// empty <Message> and CompleteMultipartUpload <ETag>) parse fine.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/s3/credentials.h"

namespace spool::s3 {

struct ErrorDocument {
  std::string code;        // "NoSuchKey", "SlowDown", ...
  std::string message;     // may be empty (Ceph RGW)
  std::string request_id;
  std::string resource;
  std::string region;      // <Region> of a wrong-region answer, when given
  std::string endpoint;    // <Endpoint> of a PermanentRedirect, when given
};
// nullopt when `xml` is not an <Error> document.
std::optional<ErrorDocument> ParseErrorDocument(std::string_view xml);

struct ListObjectsResult {
  std::vector<ObjectInfo> objects;  // key, size, version (ETag), updated
  std::vector<std::string> common_prefixes;
  bool is_truncated = false;
  std::string next_continuation_token;
};
Result<ListObjectsResult> ParseListObjectsV2(std::string_view xml);

// The UploadId of an InitiateMultipartUploadResult.
Result<std::string> ParseInitiateMultipartUpload(std::string_view xml);

struct CompleteMultipartResult {
  std::string etag;  // may be empty (Ceph RGW): Stat the object for the real one
};
// An <Error> inside a 200 answer (S3 may fail a Complete after sending 200)
// becomes the error document's status via the caller: see errors.h.
Result<CompleteMultipartResult> ParseCompleteMultipartUpload(std::string_view xml);

struct DeleteObjectsError {
  std::string key;
  std::string code;
  std::string message;
};
Result<std::vector<DeleteObjectsError>> ParseDeleteObjectsResult(std::string_view xml);

struct MultipartUploadInfo {
  std::string key;
  std::string upload_id;
  std::chrono::system_clock::time_point initiated{};
};
struct ListMultipartUploadsResult {
  std::vector<MultipartUploadInfo> uploads;
  bool is_truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};
Result<ListMultipartUploadsResult> ParseListMultipartUploads(std::string_view xml);

// One page of ListParts: the parts an unfinished multipart upload holds.
struct UploadedPart {
  int part_number = 0;
  std::string etag;  // quotes included
  uint64_t size = 0;
};
struct ListPartsResult {
  std::vector<UploadedPart> parts;
  bool is_truncated = false;
  int next_part_number_marker = 0;
};
Result<ListPartsResult> ParseListParts(std::string_view xml);

struct CopyResult {
  std::string etag;
  std::chrono::system_clock::time_point last_modified{};
};
// CopyObjectResult and CopyPartResult.
Result<CopyResult> ParseCopyResult(std::string_view xml);

struct CompletedPart {
  int part_number = 0;
  std::string etag;  // as the server returned it, quotes included
};
std::string BuildCompleteMultipartUpload(const std::vector<CompletedPart>& parts);
std::string BuildDeleteObjects(const std::vector<std::string>& keys);

// The <Credentials> of an STS AssumeRoleWithWebIdentity answer.
Result<Credentials> ParseStsCredentials(std::string_view xml);
// The <Code> and <Message> of an STS <ErrorResponse>; nullopt otherwise.
std::optional<ErrorDocument> ParseStsError(std::string_view xml);

// "2009-10-12T17:50:30.000Z" (fractions optional); nullopt when malformed.
std::optional<std::chrono::system_clock::time_point> ParseIso8601(std::string_view text);

}  // namespace spool::s3
