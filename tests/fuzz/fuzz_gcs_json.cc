// Fuzz target: every parser of GCS JSON answers (gcs/json.h) and the error
// mapping that reads them (gcs/errors.h).
#include <cstdint>
#include <string>
#include <string_view>

#include "spool/gcs/errors.h"
#include "spool/gcs/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  (void)spool::gcs::ParseObject(json);
  (void)spool::gcs::ParseObjectList(json);
  (void)spool::gcs::ParseRewriteResponse(json);
  (void)spool::gcs::ParseCredentialsFile(json);
  (void)spool::gcs::ParseTokenResponse(json);
  (void)spool::gcs::ParseServiceError(json);
  (void)spool::gcs::ParseOAuthError(json);
  spool::HttpResponse response;
  response.status = size > 0 ? 400 + data[0] % 200 : 500;
  response.error_body = std::string(json);
  (void)spool::gcs::ErrorFromResponse(response, "GET gs://bucket/key");
  return 0;
}
