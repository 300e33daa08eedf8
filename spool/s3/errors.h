// From an S3 answer to a Status: the S3 error code (from the XML body, or
// from the HTTP status when the body is empty, as for HEAD) is mapped to a
// canonical code, the service's code and request id are kept as RemoteError,
// and the message names the operation, the object's URL, the endpoint and
// the access key id (never the secret) and says what to do.
//
// Retryable answers (500, 502, 503, 504, 408, 429, SlowDown, RequestTimeout,
// InternalError) map to Unavailable so that spool::Retry retries them.
// Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "spool/core/http/transport.h"
#include "spool/core/status.h"

namespace spool::s3 {

// What a request was about, for error messages.
struct ErrorContext {
  std::string operation;      // "GET", "PUT part 3", "ListObjectsV2", ...
  std::string resource;       // "s3://bucket/key"
  std::string endpoint;       // "http://127.0.0.1:47480"
  std::string access_key_id;  // empty for anonymous requests
};

// The canonical code of an S3 error code, or of the HTTP status alone when
// `s3_code` is empty or unknown.
StatusCode CodeForS3Error(std::string_view s3_code, int http_status);

// The Status of a non-2xx answer (or of an <Error> document sent with 200).
Status ErrorFromResponse(const HttpResponse& response, std::string_view body, const ErrorContext& context);
inline Status ErrorFromResponse(const HttpResponse& response, const ErrorContext& context) {
  return ErrorFromResponse(response, response.error_body, context);
}

}  // namespace spool::s3
