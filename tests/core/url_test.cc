#include "spool/core/url.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace spool {
namespace {

Url Parsed(std::string_view text) {
  Result<Url> url = ParseUrl(text);
  EXPECT_TRUE(url.ok()) << text << ": " << url.status().ToString();
  return url.ok() ? *url : Url{};
}

void ExpectInvalid(std::string_view text, std::string_view why) {
  Result<Url> url = ParseUrl(text);
  ASSERT_FALSE(url.ok()) << "accepted " << text;
  EXPECT_EQ(url.status().code(), StatusCode::kInvalidArgument) << text;
  // The message quotes the input and says what is wrong.
  std::string quoted = "\"";
  quoted += text;
  quoted += '"';
  EXPECT_NE(url.status().message().find(quoted), std::string::npos)
      << url.status().message();
  EXPECT_NE(url.status().message().find(why), std::string::npos) << url.status().message();
}

TEST(UrlTest, S3) {
  Url url = Parsed("s3://my-bucket.v2/path/to/key.txt");
  EXPECT_EQ(url.scheme, "s3");
  EXPECT_EQ(url.bucket, "my-bucket.v2");
  EXPECT_EQ(url.key, "path/to/key.txt");
  EXPECT_EQ(url.ToString(), "s3://my-bucket.v2/path/to/key.txt");
}

TEST(UrlTest, BucketRootAndTrailingSlash) {
  Url root = Parsed("s3://bucket");
  EXPECT_EQ(root.bucket, "bucket");
  EXPECT_EQ(root.key, "");
  EXPECT_EQ(root.ToString(), "s3://bucket");
  EXPECT_EQ(Parsed("s3://bucket/").key, "");
  EXPECT_EQ(Parsed("gs://bucket/dir/").key, "dir/");
}

TEST(UrlTest, KeysAreTakenLiterally) {
  // No percent-decoding, no collapsing of slashes: keys are opaque to S3 and GCS.
  Url url = Parsed("s3://bucket/a%20b//c?x=1#y");
  EXPECT_EQ(url.key, "a%20b//c?x=1#y");
  EXPECT_EQ(Parsed("gs://bucket/ünïcode key/☃").key, "ünïcode key/☃");
}

TEST(UrlTest, SchemeIsCaseInsensitive) {
  Url url = Parsed("S3://bucket/k");
  EXPECT_EQ(url.scheme, "s3");
  EXPECT_EQ(url.ToString(), "s3://bucket/k");
}

TEST(UrlTest, Gcs) {
  Url url = Parsed("gs://my_bucket-1/obj");
  EXPECT_EQ(url.scheme, "gs");
  EXPECT_EQ(url.bucket, "my_bucket-1");
  EXPECT_EQ(url.key, "obj");
  // Dotted GCS names may be longer than 63 characters, each part at most 63.
  std::string part(60, 'a');
  std::string dotted = part + "." + part + "." + part;
  EXPECT_EQ(Parsed("gs://" + dotted + "/k").bucket, dotted);
}

TEST(UrlTest, Memory) {
  Url url = Parsed("mem://test/a/b");
  EXPECT_EQ(url.scheme, "mem");
  EXPECT_EQ(url.bucket, "test");
  EXPECT_EQ(url.key, "a/b");
  EXPECT_EQ(url.ToString(), "mem://test/a/b");
  EXPECT_EQ(Parsed("mem://x").bucket, "x");  // no length rule for the test store
}

TEST(UrlTest, FileUrls) {
  Url url = Parsed("file:///tmp/data/x.rec");
  EXPECT_EQ(url.scheme, "file");
  EXPECT_EQ(url.bucket, "");
  EXPECT_EQ(url.key, "tmp/data/x.rec");
  EXPECT_EQ(url.ToString(), "file:///tmp/data/x.rec");
  EXPECT_EQ(Parsed("file://localhost/tmp/x").key, "tmp/x");
  EXPECT_EQ(Parsed("file:/tmp/x").key, "tmp/x");
  EXPECT_EQ(Parsed("file:///").key, "");
  EXPECT_EQ(Parsed("file:///tmp/dir/").key, "tmp/dir/");
}

TEST(UrlTest, PlainPaths) {
  EXPECT_EQ(Parsed("/var/lib/x").ToString(), "file:///var/lib/x");
  EXPECT_EQ(Parsed("/var/./lib/../x").key, "var/x");
  EXPECT_EQ(Parsed("/var/lib/").key, "var/lib/");
}

TEST(UrlTest, RelativePathsBecomeAbsolute) {
  std::string cwd = std::filesystem::current_path().generic_string();
  ASSERT_EQ(cwd.front(), '/');
  EXPECT_EQ(Parsed("data/x.rec").key, cwd.substr(1) + "/data/x.rec");
  EXPECT_EQ(Parsed("./x").key, cwd.substr(1) + "/x");
  // A colon in a file name is not a scheme.
  EXPECT_EQ(Parsed("notes:2024.txt").key, cwd.substr(1) + "/notes:2024.txt");
}

TEST(UrlTest, Errors) {
  ExpectInvalid("s3://", "empty");
  ExpectInvalid("s3:///key", "empty");
  ExpectInvalid("gs://", "empty");
  ExpectInvalid("mem:///k", "empty");
  ExpectInvalid("s3://ab/k", "3 to 63");
  ExpectInvalid("s3://" + std::string(64, 'a') + "/k", "3 to 63");
  ExpectInvalid("s3://My-Bucket/k", "lowercase");
  ExpectInvalid("s3://my_bucket/k", "lowercase letters, digits, '.' and '-'");
  ExpectInvalid("s3://-bucket/k", "start and end");
  ExpectInvalid("s3://bucket-/k", "start and end");
  ExpectInvalid("s3://buc..ket/k", "..");
  ExpectInvalid("gs://Bucket/k", "lowercase");
  ExpectInvalid("gs://b!cket/k", "lowercase letters, digits, '.', '_' and '-'");
  ExpectInvalid("gs://" + std::string(64, 'a') + "/k", "3 to 63");
  ExpectInvalid("gs://" + std::string(64, 'a') + ".bb/k", "at most 63");
  ExpectInvalid("mem://a b/k", "letters, digits");
  ExpectInvalid("s3://bucket/" + std::string(1025, 'k'), "1024 bytes");
  ExpectInvalid("s3:bucket/key", "s3://bucket/key");
  ExpectInvalid("gs:/bucket/key", "gs://bucket/key");
  ExpectInvalid("http://example.com/x", "unknown scheme \"http\"");
  ExpectInvalid("az://container/blob", "unknown scheme");
  ExpectInvalid("file://otherhost/tmp/x", "no host");
  ExpectInvalid("file:relative/x", "absolute path");
  ExpectInvalid("file://", "empty");
}

TEST(UrlTest, EmptyAndNulAreRejected) {
  Result<Url> empty = ParseUrl("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);

  using namespace std::string_view_literals;
  Result<Url> nul = ParseUrl("s3://bucket/a\0b"sv);
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nul.status().message().find("NUL"), std::string::npos);
}

TEST(UrlTest, WithKey) {
  Url base = Parsed("gs://bucket/dir/a");
  Url sibling = base.WithKey("dir/b");
  EXPECT_EQ(sibling.ToString(), "gs://bucket/dir/b");
  EXPECT_EQ(base.key, "dir/a");
  EXPECT_EQ(Parsed("/tmp/a").WithKey("tmp/b").ToString(), "file:///tmp/b");
}

TEST(UrlTest, ToStringRoundTrips) {
  for (std::string_view text : {"s3://bucket/k/x", "gs://b_1/ü", "mem://m/", "file:///a/b/"}) {
    Url url = Parsed(text);
    EXPECT_EQ(Parsed(url.ToString()).ToString(), url.ToString()) << text;
  }
}

TEST(JoinKeyTest, ExactlyOneSlash) {
  EXPECT_EQ(JoinKey("a", "b"), "a/b");
  EXPECT_EQ(JoinKey("a/", "b"), "a/b");
  EXPECT_EQ(JoinKey("a", "/b"), "a/b");
  EXPECT_EQ(JoinKey("a//", "//b/c"), "a/b/c");
  EXPECT_EQ(JoinKey("", "b"), "b");
  EXPECT_EQ(JoinKey("", "/b"), "b");
  EXPECT_EQ(JoinKey("a", ""), "a/");
  EXPECT_EQ(JoinKey("", ""), "");
}

}  // namespace
}  // namespace spool
