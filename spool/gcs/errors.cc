#include "spool/gcs/errors.h"

#include <string>

#include "spool/gcs/json.h"

namespace spool::gcs {

StatusCode StatusCodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 400: return StatusCode::kInvalidArgument;
    case 401: return StatusCode::kUnauthenticated;
    case 403: return StatusCode::kPermissionDenied;
    case 404: return StatusCode::kNotFound;
    case 408: return StatusCode::kUnavailable;
    case 409: return StatusCode::kAlreadyExists;
    case 410: return StatusCode::kFailedPrecondition;  // e.g. an expired upload session
    case 304:
    case 412: return StatusCode::kFailedPrecondition;
    case 416: return StatusCode::kOutOfRange;
    case 429: return StatusCode::kUnavailable;
    case 499: return StatusCode::kCancelled;
    case 501: return StatusCode::kUnimplemented;
    default: break;
  }
  if (http_status >= 500) return StatusCode::kUnavailable;
  return StatusCode::kInternal;
}

Status ErrorFromResponse(const HttpResponse& response, std::string_view what) {
  std::string detail;
  std::string reason;
  if (auto error = ParseServiceError(response.error_body)) {
    detail = error->message;
    reason = error->reason;
  } else if (auto oauth = ParseOAuthError(response.error_body)) {
    detail = *oauth;
  } else if (!response.error_body.empty() && response.error_body.size() < 200 &&
             response.error_body.find('<') == std::string::npos) {
    detail = response.error_body;
  } else {
    detail = "HTTP " + std::to_string(response.status);
  }
  std::string message = std::string(what) + ": " + detail;
  if (!reason.empty()) message += " (" + reason + ")";
  if (response.status == 401) {
    message += "; check the credentials in use (SPOOL_LOG=info shows which were found)";
  } else if (response.status == 403) {
    message += "; the credentials lack a permission on this bucket or object";
  } else if (response.status == 429 || response.status >= 500) {
    message += "; the service is busy or failing, try again later";
  }
  RemoteError remote;
  remote.http_status = response.status;
  remote.service_code = reason;
  remote.request_id = response.headers.Get("x-guploader-uploadid").value_or("");
  return Status(StatusCodeForHttpStatus(response.status), std::move(message)).WithRemote(std::move(remote));
}

}  // namespace spool::gcs
