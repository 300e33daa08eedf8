#include "spool/core/log.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "spool/core/env.h"

namespace spool::log {
namespace {

TEST(RedactHeaderTest, SecretsAreRedactedWhateverTheCase) {
  for (std::string_view name :
       {"Authorization", "authorization", "AUTHORIZATION", "x-amz-security-token", "X-Amz-Security-Token",
        "x-goog-iam-authorization-token", "Proxy-Authorization", "Cookie", "Set-Cookie",
        "x-amz-server-side-encryption-customer-key", "x-goog-encryption-key"}) {
    std::string out = RedactHeader(name, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/..., Signature=deadbeef");
    EXPECT_EQ(out, "<redacted>") << name;
  }
}

TEST(RedactHeaderTest, OtherHeadersAreKept) {
  EXPECT_EQ(RedactHeader("Content-Length", "42"), "42");
  EXPECT_EQ(RedactHeader("x-amz-content-sha256", "UNSIGNED-PAYLOAD"), "UNSIGNED-PAYLOAD");
  EXPECT_EQ(RedactHeader("x-amz-date", "20260101T000000Z"), "20260101T000000Z");
  EXPECT_EQ(RedactHeader("x-goog-hash", "crc32c=yZRlqg=="), "crc32c=yZRlqg==");
}

TEST(RedactUrlTest, PresignedS3Url) {
  std::string url =
      "https://bucket.s3.amazonaws.com/key?X-Amz-Algorithm=AWS4-HMAC-SHA256"
      "&X-Amz-Credential=AKIDEXAMPLE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z"
      "&X-Amz-Expires=60&X-Amz-Security-Token=FQoGZXIvYXdzEJr&X-Amz-SignedHeaders=host"
      "&X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";
  std::string out = RedactUrl(url);
  EXPECT_EQ(out,
            "https://bucket.s3.amazonaws.com/key?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=<redacted>&X-Amz-Date=20260101T000000Z"
            "&X-Amz-Expires=60&X-Amz-Security-Token=<redacted>&X-Amz-SignedHeaders=host"
            "&X-Amz-Signature=<redacted>");
  EXPECT_EQ(out.find("AKIDEXAMPLE"), std::string::npos);
  EXPECT_EQ(out.find("fe5f80f7"), std::string::npos);
}

TEST(RedactUrlTest, OtherSecretParameters) {
  EXPECT_EQ(RedactUrl("https://storage.googleapis.com/b/o?access_token=ya29.abc&alt=media"),
            "https://storage.googleapis.com/b/o?access_token=<redacted>&alt=media");
  EXPECT_EQ(RedactUrl("https://h/p?AWSAccessKeyId=AKID&Expires=1&Signature=abc%3D"),
            "https://h/p?AWSAccessKeyId=<redacted>&Expires=1&Signature=<redacted>");
  EXPECT_EQ(RedactUrl("https://acct.blob/x?sv=2020&sig=abc&token=t#frag"),
            "https://acct.blob/x?sv=2020&sig=<redacted>&token=<redacted>#frag");
  EXPECT_EQ(RedactUrl("https://h/p?X-Goog-Signature=abc&X-Goog-Credential=sa%40p"),
            "https://h/p?X-Goog-Signature=<redacted>&X-Goog-Credential=<redacted>");
}

TEST(RedactUrlTest, PasswordInAuthority) {
  EXPECT_EQ(RedactUrl("http://user:hunter2@proxy:3128/path"), "http://user:<redacted>@proxy:3128/path");
  EXPECT_EQ(RedactUrl("http://user@host/path?prefix=a@b"), "http://user@host/path?prefix=a@b");
}

TEST(RedactUrlTest, HarmlessUrlsAreUnchanged) {
  for (std::string_view url : {"https://s3.amazonaws.com/bucket/key", "http://127.0.0.1:9000/b?list-type=2&prefix=a%2F",
                               "https://h/p?", "https://h/p?flag&x=", "s3://bucket/key"}) {
    EXPECT_EQ(RedactUrl(url), url);
  }
}

TEST(LogTest, DebugLinesGoToStderrWhenEnabled) {
  // The level is read once, on first use; nothing in this binary logs
  // before this test.
  ScopedEnvOverride debug(Env::Fixed({{"SPOOL_LOG", "debug"}}));
  EXPECT_EQ(CurrentLevel(), Level::kDebug);
  EXPECT_TRUE(DebugEnabled());
  EXPECT_TRUE(InfoEnabled());

  testing::internal::CaptureStderr();
  Debug("http", "GET " + RedactUrl("https://h/k?X-Amz-Signature=abc"));
  Write(Level::kInfo, "retry", "second line");
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find(" debug http: GET https://h/k?X-Amz-Signature=<redacted>\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" info retry: second line\n"), std::string::npos) << out;
  EXPECT_EQ(out.rfind("spool ", 0), 0u) << out;
  EXPECT_EQ(out.find("abc"), std::string::npos);
}

}  // namespace
}  // namespace spool::log
