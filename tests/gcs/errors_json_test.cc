// The JSON mapping of API documents and the mapping of error answers to Status.
#include <gtest/gtest.h>

#include "spool/core/crc32c.h"
#include "spool/core/retry.h"
#include "spool/gcs/errors.h"
#include "spool/gcs/json.h"

namespace spool::gcs {
namespace {

HttpResponse Answer(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.error_body = std::move(body);
  response.headers.Add("X-GUploader-UploadID", "upload-123");
  return response;
}

std::string ErrorJson(int code, std::string_view reason, std::string_view message) {
  return R"({"error":{"code":)" + std::to_string(code) + R"(,"message":")" + std::string(message) +
         R"(","errors":[{"domain":"global","reason":")" + std::string(reason) + R"(","message":"x"}]}})";
}

TEST(ErrorMapping, CodesFollowTheHttpStatus) {
  EXPECT_EQ(StatusCodeForHttpStatus(400), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusCodeForHttpStatus(401), StatusCode::kUnauthenticated);
  EXPECT_EQ(StatusCodeForHttpStatus(403), StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusCodeForHttpStatus(404), StatusCode::kNotFound);
  EXPECT_EQ(StatusCodeForHttpStatus(409), StatusCode::kAlreadyExists);
  EXPECT_EQ(StatusCodeForHttpStatus(412), StatusCode::kFailedPrecondition);
  EXPECT_EQ(StatusCodeForHttpStatus(416), StatusCode::kOutOfRange);
  EXPECT_EQ(StatusCodeForHttpStatus(499), StatusCode::kCancelled);
  // What the retry loop retries (Google's retry guidance: 408, 429, 5xx).
  for (int status : {408, 429, 500, 502, 503, 504}) {
    EXPECT_EQ(StatusCodeForHttpStatus(status), StatusCode::kUnavailable) << status;
    EXPECT_TRUE(IsRetryable(Status(StatusCodeForHttpStatus(status), "x"))) << status;
  }
  for (int status : {400, 401, 403, 404, 409, 412, 416}) {
    EXPECT_FALSE(IsRetryable(Status(StatusCodeForHttpStatus(status), "x"))) << status;
  }
}

TEST(ErrorMapping, KeepsMessageReasonAndUploadId) {
  Status status = ErrorFromResponse(Answer(404, ErrorJson(404, "notFound", "No such object: b/k")), "stat gs://b/k");
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "stat gs://b/k: No such object: b/k (notFound)");
  EXPECT_EQ(status.remote().http_status, 404);
  EXPECT_EQ(status.remote().service_code, "notFound");
  EXPECT_EQ(status.remote().request_id, "upload-123");
}

TEST(ErrorMapping, PreconditionFailureAndRateLimit) {
  Status precondition = ErrorFromResponse(Answer(412, ErrorJson(412, "conditionNotMet", "At least one...")), "w");
  EXPECT_EQ(precondition.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(precondition.remote().service_code, "conditionNotMet");
  Status throttled = ErrorFromResponse(Answer(429, ErrorJson(429, "rateLimitExceeded", "slow down")), "w");
  EXPECT_EQ(throttled.code(), StatusCode::kUnavailable);
  EXPECT_NE(throttled.message().find("rateLimitExceeded"), std::string::npos);
}

TEST(ErrorMapping, AuthErrorsSayWhatToCheck) {
  Status status = ErrorFromResponse(Answer(401, ErrorJson(401, "authError", "Invalid Credentials")), "list gs://b/");
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(status.message().find("SPOOL_LOG=info"), std::string::npos);
}

TEST(ErrorMapping, OAuthAndNonJsonBodies) {
  Status oauth = ErrorFromResponse(
      Answer(400, R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})"), "token");
  EXPECT_EQ(oauth.message(), "token: invalid_grant: Invalid JWT Signature.");
  Status html = ErrorFromResponse(Answer(502, "<html>Bad Gateway</html>"), "GET x");
  EXPECT_EQ(html.message(), "GET x: HTTP 502; the service is busy or failing, try again later");
  EXPECT_EQ(html.code(), StatusCode::kUnavailable);
}

TEST(Json, ObjectResourceWithQuotedNumbersAndUnknownFields) {
  auto object = ParseObject(R"({
    "kind": "storage#object", "id": "b/a/b/17", "name": "a/b", "bucket": "b",
    "generation": "1763771234567890", "metageneration": "3", "contentType": "text/plain",
    "size": "9", "md5Hash": "JfnnlDI7RTiF9RgfG2JNCw==", "crc32c": "4waSgw==",
    "updated": "2026-11-22T00:56:57.031Z", "someFutureField": {"nested": [1, 2]},
    "metadata": {"step": "1200"}})");
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ(object->name, "a/b");
  EXPECT_EQ(object->generation, 1763771234567890);
  EXPECT_EQ(object->metageneration, 3);
  EXPECT_EQ(object->size, 9u);
  ASSERT_TRUE(object->crc32c.has_value());
  EXPECT_EQ(*object->crc32c, crc32c::Value("123456789"));
  EXPECT_EQ(object->metadata.at("step"), "1200");
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(object->updated.time_since_epoch()).count() % 1000,
            31);
}

TEST(Json, ListPageAndRewriteResponse) {
  auto page = ParseObjectList(
      R"({"kind":"storage#objects","nextPageToken":"abc","prefixes":["d/"],"items":[{"name":"x","size":"1"}]})");
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->next_page_token, "abc");
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->prefixes, std::vector<std::string>{"d/"});
  auto rewrite = ParseRewriteResponse(
      R"({"kind":"storage#rewriteResponse","totalBytesRewritten":"10","objectSize":"20","done":false,"rewriteToken":"t"})");
  ASSERT_TRUE(rewrite.ok());
  EXPECT_FALSE(rewrite->done);
  EXPECT_EQ(rewrite->object_size, 20u);
  EXPECT_FALSE(rewrite->resource.has_value());
}

TEST(Json, TokenResponsesInBothSpellingsAndBadDocuments) {
  auto token = ParseTokenResponse(R"({"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"})");
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->access_token, "ya29.x");
  EXPECT_EQ(token->expires_in, 3599);
  EXPECT_FALSE(ParseTokenResponse(R"({"token_type":"Bearer"})").ok());
  EXPECT_EQ(ParseObject("not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseServiceError(R"({"error":"invalid_grant"})").has_value());
}

TEST(Json, NewObjectMetadataCarriesTheCrc32c) {
  EXPECT_EQ(NewObjectJson(NewObject{"a/b", "text/plain", crc32c::Value("123456789")}),
            R"({"name":"a/b","contentType":"text/plain","crc32c":"4waSgw=="})");
  EXPECT_EQ(NewObjectJson(NewObject{"k", "", std::nullopt}), R"({"name":"k"})");
}

}  // namespace
}  // namespace spool::gcs
