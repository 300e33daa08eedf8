#include "spool/s3/errors.h"

#include <map>

#include "spool/s3/xml.h"

namespace spool::s3 {
namespace {

struct KnownError {
  StatusCode code;
  const char* advice;  // what the user should do; may be empty
};

const std::map<std::string_view, KnownError>& KnownErrors() {
  static const auto* errors = new std::map<std::string_view, KnownError>{
      {"NoSuchKey", {StatusCode::kNotFound, "the object does not exist; check the key"}},
      {"NoSuchBucket",
       {StatusCode::kNotFound, "the bucket does not exist; check its name, the endpoint and the region"}},
      {"NoSuchUpload", {StatusCode::kNotFound, "the multipart upload was aborted or completed already"}},
      {"NotFound", {StatusCode::kNotFound, "the object does not exist; check the key"}},
      {"AccessDenied",
       {StatusCode::kPermissionDenied,
        "the credentials are not allowed to do this; check the bucket policy and the key's permissions"}},
      {"SignatureDoesNotMatch",
       {StatusCode::kUnauthenticated,
        "the secret access key does not belong to this access key id; check AWS_SECRET_ACCESS_KEY or the profile"}},
      {"InvalidAccessKeyId",
       {StatusCode::kUnauthenticated,
        "the endpoint does not know this access key id; check the credentials and the endpoint"}},
      {"AllAccessDisabled", {StatusCode::kPermissionDenied, ""}},
      {"AccountProblem", {StatusCode::kPermissionDenied, ""}},
      {"InvalidSecurity", {StatusCode::kPermissionDenied, ""}},
      {"ExpiredToken", {StatusCode::kUnauthenticated, "the session token expired; refresh the credentials"}},
      {"InvalidToken", {StatusCode::kUnauthenticated, "the session token is invalid; refresh the credentials"}},
      {"TokenRefreshRequired", {StatusCode::kUnauthenticated, "refresh the credentials"}},
      {"RequestTimeTooSkewed",
       {StatusCode::kFailedPrecondition, "this machine's clock is off by more than 15 minutes; fix it (NTP)"}},
      {"PreconditionFailed", {StatusCode::kFailedPrecondition, "the object changed or exists already"}},
      {"ConditionalRequestConflict", {StatusCode::kUnavailable, ""}},
      {"InvalidRange", {StatusCode::kOutOfRange, "the range starts past the end of the object"}},
      {"PermanentRedirect",
       {StatusCode::kFailedPrecondition, "the bucket is in another region; set the region (--region or AWS_REGION)"}},
      {"AuthorizationHeaderMalformed",
       {StatusCode::kFailedPrecondition, "the bucket is in another region; set the region (--region or AWS_REGION)"}},
      {"IllegalLocationConstraintException",
       {StatusCode::kFailedPrecondition, "set the region of the bucket (--region or AWS_REGION)"}},
      {"InvalidLocationConstraint",
       {StatusCode::kInvalidArgument,
        "the server has no such region; on Ceph RGW and other S3-compatible servers leave --region and AWS_REGION "
        "unset, or name one of its zonegroups"}},
      {"BucketAlreadyExists", {StatusCode::kAlreadyExists, ""}},
      {"BucketAlreadyOwnedByYou", {StatusCode::kAlreadyExists, ""}},
      {"BadDigest", {StatusCode::kDataLoss, "the data was corrupted on the way to the server"}},
      {"XAmzContentSHA256Mismatch", {StatusCode::kDataLoss, "the data was corrupted on the way to the server"}},
      {"InvalidDigest", {StatusCode::kInvalidArgument, ""}},
      {"EntityTooSmall", {StatusCode::kInvalidArgument, "every part but the last must be at least 5 MiB"}},
      {"EntityTooLarge", {StatusCode::kInvalidArgument, "use a multipart upload for objects over 5 GiB"}},
      {"InvalidPart", {StatusCode::kInvalidArgument, ""}},
      {"InvalidPartOrder", {StatusCode::kInvalidArgument, ""}},
      {"MalformedXML", {StatusCode::kInvalidArgument, ""}},
      {"InvalidArgument", {StatusCode::kInvalidArgument, ""}},
      {"InvalidBucketName", {StatusCode::kInvalidArgument, "check the bucket name"}},
      {"KeyTooLongError", {StatusCode::kInvalidArgument, "keys are at most 1024 bytes"}},
      {"MethodNotAllowed", {StatusCode::kFailedPrecondition, ""}},
      {"QuotaExceeded",
       {StatusCode::kResourceExhausted, "the bucket or user quota is full; delete data or raise the quota"}},
      {"NotImplemented", {StatusCode::kUnimplemented, "this server does not support the operation"}},
      {"SlowDown", {StatusCode::kUnavailable, "the server asks to slow down"}},
      {"ServiceUnavailable", {StatusCode::kUnavailable, ""}},
      {"InternalError", {StatusCode::kUnavailable, ""}},
      {"RequestTimeout", {StatusCode::kUnavailable, ""}},
  };
  return *errors;
}

StatusCode CodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 400: return StatusCode::kInvalidArgument;
    case 401: return StatusCode::kUnauthenticated;
    case 403: return StatusCode::kPermissionDenied;
    case 404: return StatusCode::kNotFound;
    case 409: return StatusCode::kFailedPrecondition;
    case 412: return StatusCode::kFailedPrecondition;
    case 416: return StatusCode::kOutOfRange;
    case 408:
    case 429: return StatusCode::kUnavailable;
    case 501: return StatusCode::kUnimplemented;
    case 301:
    case 307: return StatusCode::kFailedPrecondition;
    default: return http_status >= 500 ? StatusCode::kUnavailable : StatusCode::kInternal;
  }
}

// HEAD answers carry no body: name the error from the status alone.
std::string CodeForEmptyBody(int http_status) {
  switch (http_status) {
    case 301: return "PermanentRedirect";
    case 403: return "AccessDenied";
    case 404: return "NotFound";
    case 412: return "PreconditionFailed";
    case 416: return "InvalidRange";
    default: return "HTTP " + std::to_string(http_status);
  }
}

}  // namespace

StatusCode CodeForS3Error(std::string_view s3_code, int http_status) {
  auto it = KnownErrors().find(s3_code);
  if (it != KnownErrors().end()) return it->second.code;
  return CodeForHttpStatus(http_status);
}

Status ErrorFromResponse(const HttpResponse& response, std::string_view body, const ErrorContext& context) {
  ErrorDocument document = ParseErrorDocument(body).value_or(ErrorDocument{});
  if (document.code.empty()) document.code = CodeForEmptyBody(response.status);
  std::string request_id = document.request_id;
  if (request_id.empty()) request_id = response.headers.Get("x-amz-request-id").value_or("");
  if (document.region.empty()) document.region = response.headers.Get("x-amz-bucket-region").value_or("");

  std::string message = context.operation + " " + context.resource + " at " + context.endpoint;
  if (!context.access_key_id.empty()) message += " (access key id " + context.access_key_id + ")";
  message += ": " + document.code;
  if (!document.message.empty()) message += ": " + document.message;
  auto known = KnownErrors().find(document.code);
  if (known != KnownErrors().end() && *known->second.advice != '\0') {
    message += "; ";
    message += known->second.advice;
  }
  if (!document.region.empty()) message += " (the bucket's region is " + document.region + ")";

  return Status(CodeForS3Error(document.code, response.status), std::move(message))
      .WithRemote(RemoteError{response.status, document.code, request_id});
}

}  // namespace spool::s3
