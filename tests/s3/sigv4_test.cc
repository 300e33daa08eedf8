// SigV4 against AWS's published examples: the SigV4 test suite (service
// "service", AKIDEXAMPLE, 2015-08-30) and the S3 signing examples
// (examplebucket, AKIAIOSFODNN7EXAMPLE, 2013-05-24).
#include "spool/s3/sigv4.h"

#include <gtest/gtest.h>

#include <ctime>

#include "spool/s3/crypto.h"

namespace spool::s3 {
namespace {

std::chrono::system_clock::time_point Utc(int year, int month, int day, int hour, int minute, int second) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

const Credentials kSuiteCredentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", std::nullopt};
const SigningScope kSuiteScope{"us-east-1", "service"};
const auto kSuiteTime = Utc(2015, 8, 30, 12, 36, 0);

const Credentials kS3Credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "",
                                 std::nullopt};
const SigningScope kS3Scope{"us-east-1", "s3"};
const auto kS3Time = Utc(2013, 5, 24, 0, 0, 0);

std::string SuiteSignature(SignableRequest request) {
  std::string authorization = SignHeaders(request, kSuiteCredentials, kSuiteScope, kSuiteTime);
  return authorization.substr(authorization.find("Signature=") + 10);
}

SignableRequest SuiteGet(KeyValues query) {
  return SignableRequest{"GET", "/", std::move(query), {{"Host", "example.amazonaws.com"}},
                         std::string(kEmptyPayloadHash)};
}

TEST(SigV4Suite, GetVanillaCanonicalRequestStringToSignAndAuthorization) {
  SignableRequest request = SuiteGet({});
  std::string authorization = SignHeaders(request, kSuiteCredentials, kSuiteScope, kSuiteTime);
  EXPECT_EQ(CanonicalRequest(request),
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(StringToSign("20150830T123600Z", kSuiteScope, CanonicalRequest(request)),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(SigV4Suite, GetVanillaQueryOrderKeyCase) {
  SignableRequest request = SuiteGet({{"Param2", "value2"}, {"Param1", "value1"}});
  EXPECT_EQ(CanonicalQueryString(request.query), "Param1=value1&Param2=value2");
  EXPECT_EQ(SuiteSignature(request), "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST(SigV4Suite, GetVanillaEmptyQueryKey) {
  EXPECT_EQ(SuiteSignature(SuiteGet({{"Param1", "value1"}})),
            "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb");
}

TEST(SigV4Suite, PostVanilla) {
  SignableRequest request = SuiteGet({});
  request.method = "POST";
  EXPECT_EQ(SuiteSignature(request), "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

TEST(SigV4Suite, PostXWwwFormUrlencoded) {
  SignableRequest request{"POST", "/", {},
                          {{"Content-Type", "application/x-www-form-urlencoded"}, {"Host", "example.amazonaws.com"}},
                          Sha256Hex("Param1=value1")};
  EXPECT_EQ(request.payload_hash, "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e");
  EXPECT_EQ(SuiteSignature(request), "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
}

TEST(SigV4S3, GetObjectWithRange) {
  SignableRequest request{"GET", "/test.txt", {},
                          {{"Host", "examplebucket.s3.amazonaws.com"},
                           {"Range", "bytes=0-9"},
                           {"x-amz-content-sha256", std::string(kEmptyPayloadHash)}},
                          std::string(kEmptyPayloadHash)};
  std::string authorization = SignHeaders(request, kS3Credentials, kS3Scope, kS3Time);
  EXPECT_EQ(CanonicalRequest(request),
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(StringToSign("20130524T000000Z", kS3Scope, CanonicalRequest(request)),
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4S3, PutObjectWithSignedPayloadAndEncodedKey) {
  const std::string payload_hash = Sha256Hex("Welcome to Amazon S3.");
  EXPECT_EQ(payload_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  SignableRequest request{"PUT", "/" + UriEncode("test$file.text", false), {},
                          {{"Host", "examplebucket.s3.amazonaws.com"},
                           {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                           {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                           {"x-amz-content-sha256", payload_hash}},
                          payload_hash};
  EXPECT_EQ(request.encoded_path, "/test%24file.text");
  std::string authorization = SignHeaders(request, kS3Credentials, kS3Scope, kS3Time);
  EXPECT_EQ(authorization.substr(authorization.find("Signature=") + 10),
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(SigV4S3, ListObjectsQuery) {
  SignableRequest request{"GET", "/", {{"max-keys", "2"}, {"prefix", "J"}},
                          {{"Host", "examplebucket.s3.amazonaws.com"},
                           {"x-amz-content-sha256", std::string(kEmptyPayloadHash)}},
                          std::string(kEmptyPayloadHash)};
  std::string authorization = SignHeaders(request, kS3Credentials, kS3Scope, kS3Time);
  EXPECT_EQ(authorization.substr(authorization.find("Signature=") + 10),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4S3, GetBucketLifecycleEmptyQueryValue) {
  SignableRequest request{"GET", "/", {{"lifecycle", ""}},
                          {{"Host", "examplebucket.s3.amazonaws.com"},
                           {"x-amz-content-sha256", std::string(kEmptyPayloadHash)}},
                          std::string(kEmptyPayloadHash)};
  std::string authorization = SignHeaders(request, kS3Credentials, kS3Scope, kS3Time);
  EXPECT_EQ(authorization.substr(authorization.find("Signature=") + 10),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4S3, PresignedGetObject) {
  SignableRequest request{"GET", "/test.txt", {}, {{"Host", "examplebucket.s3.amazonaws.com"}}, ""};
  std::string query = Presign(request, kS3Credentials, kS3Scope, kS3Time, std::chrono::seconds(86400));
  EXPECT_EQ(query,
            "X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-Signature="
            "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
            "&X-Amz-SignedHeaders=host");
}

TEST(SigV4, SessionTokenIsSignedAsHeader) {
  Credentials credentials = kSuiteCredentials;
  credentials.session_token = "token";
  SignableRequest request = SuiteGet({});
  std::string authorization = SignHeaders(request, credentials, kSuiteScope, kSuiteTime);
  EXPECT_NE(authorization.find("SignedHeaders=host;x-amz-date;x-amz-security-token,"), std::string::npos);
}

TEST(SigV4, CanonicalHeadersTrimAndJoinDuplicates) {
  KeyValues headers{{"My-Header1", "  a   b   c  "}, {"my-header2", "x"}, {"MY-HEADER2", "y"}};
  SignableRequest request{"GET", "/", {}, headers, std::string(kEmptyPayloadHash)};
  EXPECT_EQ(CanonicalRequest(request),
            "GET\n/\n\nmy-header1:a b c\nmy-header2:x,y\n\nmy-header1;my-header2\n" +
                std::string(kEmptyPayloadHash));
}

TEST(SigV4, UriEncode) {
  EXPECT_EQ(UriEncode("a b/c~d_e-f.g+h=i&j%k", false), "a%20b/c~d_e-f.g%2Bh%3Di%26j%25k");
  EXPECT_EQ(UriEncode("a/b", true), "a%2Fb");
  EXPECT_EQ(UriEncode("\xc3\xa9", true), "%C3%A9");
}

TEST(Crypto, Base64RoundTrip) {
  EXPECT_EQ(Base64Encode(Md5("")), "1B2M2Y8AsgTpgAmY7PhCfg==");
  EXPECT_EQ(Base64Encode("ab"), "YWI=");
  EXPECT_EQ(Base64Decode("YWI=").value(), "ab");
  EXPECT_EQ(Base64Decode("YWJj").value(), "abc");
  EXPECT_FALSE(Base64Decode("YW!").has_value());
}

}  // namespace
}  // namespace spool::s3
