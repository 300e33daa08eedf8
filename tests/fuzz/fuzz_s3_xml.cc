// Fuzz target: every parser of S3's XML answers (s3/xml.h) and the error
// mapping that reads them (s3/errors.h).
#include <cstdint>
#include <string_view>

#include "spool/s3/errors.h"
#include "spool/s3/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  (void)spool::s3::ParseErrorDocument(xml);
  (void)spool::s3::ParseListObjectsV2(xml);
  (void)spool::s3::ParseInitiateMultipartUpload(xml);
  (void)spool::s3::ParseCompleteMultipartUpload(xml);
  (void)spool::s3::ParseDeleteObjectsResult(xml);
  (void)spool::s3::ParseListMultipartUploads(xml);
  (void)spool::s3::ParseCopyResult(xml);
  (void)spool::s3::ParseStsCredentials(xml);
  (void)spool::s3::ParseStsError(xml);
  (void)spool::s3::ParseIso8601(xml);
  spool::HttpResponse response;
  response.status = size > 0 ? 400 + data[0] % 200 : 500;
  (void)spool::s3::ErrorFromResponse(response, xml, {"GET", "s3://bucket/key", "http://127.0.0.1:1", "AKID"});
  return 0;
}
