// S3 error answers become Statuses with canonical codes and one-line messages.
#include "spool/s3/errors.h"

#include <gtest/gtest.h>

#include "spool/core/retry.h"

namespace spool::s3 {
namespace {

HttpResponse Answer(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.error_body = std::move(body);
  response.headers.Add("x-amz-request-id", "req-1");
  return response;
}

std::string ErrorBody(const std::string& code, const std::string& message = "") {
  return "<?xml version=\"1.0\"?><Error><Code>" + code + "</Code><Message>" + message + "</Message></Error>";
}

const ErrorContext kContext{"GET", "s3://bucket/key", "http://127.0.0.1:47480", "AKIDEXAMPLE"};

TEST(S3Errors, ServiceCodesMapToCanonicalCodes) {
  struct Case {
    const char* s3_code;
    int http_status;
    StatusCode expected;
  };
  const Case cases[] = {
      {"NoSuchKey", 404, StatusCode::kNotFound},
      {"NoSuchBucket", 404, StatusCode::kNotFound},
      {"NoSuchUpload", 404, StatusCode::kNotFound},
      {"AccessDenied", 403, StatusCode::kPermissionDenied},
      {"SignatureDoesNotMatch", 403, StatusCode::kUnauthenticated},
      {"InvalidAccessKeyId", 403, StatusCode::kUnauthenticated},
      {"ExpiredToken", 400, StatusCode::kUnauthenticated},
      {"PreconditionFailed", 412, StatusCode::kFailedPrecondition},
      {"InvalidRange", 416, StatusCode::kOutOfRange},
      {"SlowDown", 503, StatusCode::kUnavailable},
      {"InternalError", 500, StatusCode::kUnavailable},
      {"RequestTimeout", 400, StatusCode::kUnavailable},
      {"ServiceUnavailable", 503, StatusCode::kUnavailable},
      {"BadDigest", 400, StatusCode::kDataLoss},
      {"XAmzContentSHA256Mismatch", 400, StatusCode::kDataLoss},
      {"EntityTooSmall", 400, StatusCode::kInvalidArgument},
      {"PermanentRedirect", 301, StatusCode::kFailedPrecondition},
      {"AuthorizationHeaderMalformed", 400, StatusCode::kFailedPrecondition},
      {"NotImplemented", 501, StatusCode::kUnimplemented},
      {"QuotaExceeded", 403, StatusCode::kResourceExhausted},
      {"BucketAlreadyOwnedByYou", 409, StatusCode::kAlreadyExists},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CodeForS3Error(c.s3_code, c.http_status), c.expected) << c.s3_code;
  }
}

TEST(S3Errors, UnknownCodesFallBackToTheHttpStatus) {
  EXPECT_EQ(CodeForS3Error("", 404), StatusCode::kNotFound);
  EXPECT_EQ(CodeForS3Error("Whatever", 403), StatusCode::kPermissionDenied);
  EXPECT_EQ(CodeForS3Error("Whatever", 400), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeForS3Error("", 412), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeForS3Error("", 429), StatusCode::kUnavailable);
  EXPECT_EQ(CodeForS3Error("", 408), StatusCode::kUnavailable);
  for (int status : {500, 502, 503, 504}) EXPECT_EQ(CodeForS3Error("", status), StatusCode::kUnavailable);
}

TEST(S3Errors, RetryableAnswersAreRetriedByTheCoreLoop) {
  EXPECT_TRUE(IsRetryable(ErrorFromResponse(Answer(503, ErrorBody("SlowDown")), kContext)));
  EXPECT_TRUE(IsRetryable(ErrorFromResponse(Answer(500, ErrorBody("InternalError")), kContext)));
  EXPECT_TRUE(IsRetryable(ErrorFromResponse(Answer(504, ""), kContext)));
  EXPECT_FALSE(IsRetryable(ErrorFromResponse(Answer(404, ErrorBody("NoSuchKey")), kContext)));
  EXPECT_FALSE(IsRetryable(ErrorFromResponse(Answer(403, ErrorBody("AccessDenied")), kContext)));
}

TEST(S3Errors, WrongSecretIsOneLineNamingEndpointBucketAndKeyId) {
  Status status = ErrorFromResponse(Answer(403, ErrorBody("SignatureDoesNotMatch")), kContext);
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(status.remote().http_status, 403);
  EXPECT_EQ(status.remote().service_code, "SignatureDoesNotMatch");
  EXPECT_EQ(status.remote().request_id, "req-1");
  const std::string line = status.ToString();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  for (const char* part : {"s3://bucket/key", "http://127.0.0.1:47480", "AKIDEXAMPLE", "SignatureDoesNotMatch"}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing from: " << line;
  }
}

TEST(S3Errors, HeadAnswersWithoutBodyAreNamedFromTheStatus) {
  HttpResponse response = Answer(404, "");
  Status status = ErrorFromResponse(response, kContext);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.remote().service_code, "NotFound");
}

TEST(S3Errors, WrongRegionNamesTheRightOne) {
  HttpResponse response = Answer(301, ErrorBody("PermanentRedirect"));
  response.headers.Add("x-amz-bucket-region", "eu-west-1");
  Status status = ErrorFromResponse(response, kContext);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("eu-west-1"), std::string::npos) << status.message();
}

// Ceph RGW's answer to `spool mb --region eu-west-1`: a region is one of
// its zonegroups there, and the message says what to do instead.
TEST(S3Errors, AnUnknownLocationConstraintSaysWhatToSet) {
  Status status = ErrorFromResponse(Answer(400, ErrorBody("InvalidLocationConstraint")), kContext);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  const std::string line = status.ToString();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  for (const char* part : {"InvalidLocationConstraint", "--region", "zonegroup"}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing from: " << line;
  }
}

TEST(S3Errors, ServiceMessageIsKeptWhenPresent) {
  Status status = ErrorFromResponse(Answer(404, ErrorBody("NoSuchKey", "The specified key does not exist.")), kContext);
  EXPECT_NE(status.message().find("The specified key does not exist."), std::string::npos);
}

}  // namespace
}  // namespace spool::s3
