// S3Client and the S3Store reader against a scripted transport: request
// shape (signing, checksums, addressing), retries, resumed GETs, pinned
// reads and checksum verification.
#include "spool/s3/client.h"

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <mutex>

#include "spool/core/crc32c.h"
#include "spool/core/digest.h"
#include "spool/s3/crypto.h"
#include "spool/s3/s3_reader.h"
#include "spool/s3/s3_writer.h"
#include "tests/support/scripted_transport.h"

namespace spool::s3 {
namespace {

using test_support::ScriptedTransport;

ResolvedConfig LocalConfig() {
  ResolvedConfig config;
  config.endpoint = Endpoint{"http", "127.0.0.1", 9000};
  config.custom_endpoint = true;
  config.region = "us-east-1";
  config.path_style = true;
  config.sign_payload = true;
  config.concurrency = 4;
  return config;
}

RetryPolicy FastRetries() {
  RetryPolicy policy;
  policy.initial_backoff = std::chrono::milliseconds(1);
  policy.max_backoff = std::chrono::milliseconds(2);
  policy.max_attempts = 4;
  return policy;
}

std::shared_ptr<S3Client> Client(std::shared_ptr<HttpTransport> transport, ResolvedConfig config = LocalConfig()) {
  config.retry.policy = FastRetries();
  auto credentials = std::make_shared<StaticCredentialsProvider>(
      Credentials{"AKIDTEST", "secret", "", std::nullopt}, "test");
  return std::make_shared<S3Client>(config, "bucket", std::move(transport), credentials);
}

std::string RangeOf(const HttpRequest& request) { return request.headers.Get("range").value_or(""); }

// A 206 answer with the bytes of `object` that `request`'s Range asks for.
ScriptedTransport::Answer RangedAnswer(const HttpRequest& request, const std::string& object) {
  unsigned long first = 0, last = 0;
  std::sscanf(RangeOf(request).c_str(), "bytes=%lu-%lu", &first, &last);
  ScriptedTransport::Answer answer;
  answer.status = 206;
  answer.headers.Add("Content-Range", "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                                          std::to_string(object.size()));
  answer.body = object.substr(first, last - first + 1);
  return answer;
}

TEST(S3Client, PutObjectIsSignedAndCarriesChecksums) {
  auto transport = std::make_shared<ScriptedTransport>([](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.headers.Add("ETag", "\"abc\"");
    return answer;
  });
  auto client = Client(transport);
  auto etag = client->PutObject("dir/a b+c", "hello", {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_EQ(*etag, "\"abc\"");
  const HttpRequest request = transport->requests().at(0);
  EXPECT_EQ(request.method, "PUT");
  EXPECT_EQ(request.url, "http://127.0.0.1:9000/bucket/dir/a%20b%2Bc");
  // The signed SHA-256 lets the server check the body; no second digest.
  EXPECT_FALSE(request.headers.Has("content-md5"));
  EXPECT_EQ(request.headers.Get("x-amz-checksum-crc32c").value_or(""), crc32c::ToBase64(crc32c::Value("hello")));
  EXPECT_EQ(request.headers.Get("x-amz-content-sha256").value_or(""), Sha256Hex("hello"));
  const std::string authorization = request.headers.Get("Authorization").value_or("");
  EXPECT_EQ(authorization.rfind("AWS4-HMAC-SHA256 Credential=AKIDTEST/", 0), 0u) << authorization;
  EXPECT_NE(authorization.find("content-type;host;x-amz-checksum-crc32c;x-amz-content-sha256;x-amz-date"),
            std::string::npos)
      << authorization;
}

TEST(S3Client, AnUnsignedPayloadCarriesContentMd5) {
  auto transport = std::make_shared<ScriptedTransport>([](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.headers.Add("ETag", "\"abc\"");
    return answer;
  });
  ResolvedConfig config = LocalConfig();
  config.sign_payload = false;
  auto client = Client(transport, config);
  ASSERT_TRUE(client->PutObject("a", "hello", {}).ok());
  ASSERT_TRUE(client->UploadPart("b", "u-1", 1, "part one").ok());
  const auto requests = transport->requests();
  EXPECT_EQ(requests.at(0).headers.Get("content-md5").value_or(""), Base64Encode(Md5("hello")));
  EXPECT_EQ(requests.at(0).headers.Get("x-amz-content-sha256").value_or(""), "UNSIGNED-PAYLOAD");
  EXPECT_EQ(requests.at(1).headers.Get("content-md5").value_or(""), Base64Encode(Md5("part one")));
}

TEST(S3Client, VirtualHostedAddressingAndAnonymousRequests) {
  auto transport = std::make_shared<ScriptedTransport>([](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.body = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
    return answer;
  });
  ResolvedConfig config = LocalConfig();
  config.endpoint = Endpoint{"https", "s3.us-east-1.amazonaws.com", 0};
  config.path_style = false;
  config.anonymous = true;
  auto client = Client(transport, config);
  ListOptions options;
  options.prefix = "p/";
  ASSERT_TRUE(client->ListObjectsV2(options).ok());
  const HttpRequest request = transport->requests().at(0);
  EXPECT_EQ(request.url, "https://bucket.s3.us-east-1.amazonaws.com/?list-type=2&max-keys=1000&prefix=p%2F");
  EXPECT_FALSE(request.headers.Has("Authorization"));
}

TEST(S3Client, WrongRegionOnAwsIsFollowedOnce) {
  auto transport = std::make_shared<ScriptedTransport>([](const HttpRequest& request) {
    ScriptedTransport::Answer answer;
    if (request.url.find("s3.us-east-1.amazonaws.com") != std::string::npos) {
      answer.status = 301;
      answer.headers.Add("x-amz-bucket-region", "eu-west-1");
      answer.body = "<Error><Code>PermanentRedirect</Code><Message>use the right endpoint</Message></Error>";
    }
    return answer;
  });
  ResolvedConfig config = LocalConfig();
  config.endpoint = Endpoint{"https", "s3.us-east-1.amazonaws.com", 0};
  config.custom_endpoint = false;
  config.path_style = false;
  auto client = Client(transport, config);
  ASSERT_TRUE(client->DeleteObject("k").ok());
  ASSERT_TRUE(client->DeleteObject("k2").ok());
  auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].url, "https://bucket.s3.eu-west-1.amazonaws.com/k");
  EXPECT_NE(requests[1].headers.Get("Authorization").value_or("").find("/eu-west-1/s3/aws4_request"),
            std::string::npos);
  EXPECT_EQ(requests[2].url, "https://bucket.s3.eu-west-1.amazonaws.com/k2");  // remembered
  EXPECT_EQ(client->region(), "eu-west-1");
}

TEST(S3Client, WrongRegionOnACustomEndpointIsReportedWithTheRegion) {
  auto transport = std::make_shared<ScriptedTransport>([](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.status = 301;
    answer.headers.Add("x-amz-bucket-region", "eu-west-1");
    answer.body = "<Error><Code>PermanentRedirect</Code></Error>";
    return answer;
  });
  Status status = Client(transport)->DeleteObject("k");
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("eu-west-1"), std::string::npos) << status.ToString();
  EXPECT_EQ(transport->requests().size(), 1u);
}

TEST(S3Client, SlowDownIsRetriedAndAccessDeniedIsNot) {
  int calls = 0;
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    if (++calls < 3) {
      answer.status = 503;
      answer.body = "<Error><Code>SlowDown</Code><Message></Message></Error>";
    }
    return answer;
  });
  EXPECT_TRUE(Client(transport)->DeleteObject("k").ok());
  EXPECT_EQ(calls, 3);

  int denied_calls = 0;
  auto denied = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ++denied_calls;
    ScriptedTransport::Answer answer;
    answer.status = 403;
    answer.body = "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
    return answer;
  });
  Status status = Client(denied)->DeleteObject("k");
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(denied_calls, 1);
}

// Against a server that always answers 503, each exchange makes exactly
// policy.max_attempts attempts, with the backoff on a fake clock (the
// policy's long delays would otherwise take minutes).
TEST(S3Client, AttemptsAreBoundedByThePolicyOnAFakeClock) {
  int calls = 0;
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ++calls;
    ScriptedTransport::Answer answer;
    answer.status = 503;
    answer.body = "<Error><Code>ServiceUnavailable</Code><Message></Message></Error>";
    return answer;
  });
  auto now = std::chrono::steady_clock::time_point{};
  std::chrono::milliseconds slept{0};
  ResolvedConfig config = LocalConfig();
  config.retry.policy.max_attempts = 3;
  config.retry.policy.initial_backoff = std::chrono::seconds(30);
  config.retry.policy.max_backoff = std::chrono::seconds(60);
  config.retry.environment.now = [&] { return now; };
  config.retry.environment.sleep = [&](std::chrono::milliseconds delay) {
    now += delay;
    slept += delay;
  };
  config.retry.environment.uniform01 = [] { return 0.5; };
  auto credentials = std::make_shared<StaticCredentialsProvider>(
      Credentials{"AKIDTEST", "secret", "", std::nullopt}, "test");
  S3Client client(config, "bucket", transport, credentials);

  EXPECT_EQ(client.HeadObject("k").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls, 3);
  calls = 0;
  std::string buffer(10, '\0');
  EXPECT_EQ(client.GetObject("k", GetOptions{}, std::span<char>(buffer)).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls, 3);
  EXPECT_GE(slept, std::chrono::seconds(30));  // only the fake clock moved
}

TEST(S3Client, BrokenGetResumesAtTheByteItReached) {
  const std::string object = std::string(600, 'a') + std::string(400, 'b');
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest& request) {
    ScriptedTransport::Answer answer;
    answer.status = 206;
    answer.headers.Add("Content-Range", "bytes x/1000");
    if (RangeOf(request) == "bytes=0-999") {
      answer.body = object.substr(0, 600);
      answer.failure = UnavailableError("connection reset");
    } else {
      answer.body = object.substr(600);
    }
    return answer;
  });
  std::string buffer(1000, '\0');
  GetOptions options;
  options.if_match = "\"v1\"";
  auto got = Client(transport)->GetObject("k", options, buffer);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->bytes, 1000u);
  EXPECT_EQ(buffer, object);
  auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(RangeOf(requests[1]), "bytes=600-999");
  EXPECT_EQ(requests[1].headers.Get("if-match").value_or(""), "\"v1\"");  // same version
}

TEST(S3Client, ChangedObjectIsFailedPrecondition) {
  auto transport = std::make_shared<ScriptedTransport>([](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.status = 412;
    answer.body = "<Error><Code>PreconditionFailed</Code></Error>";
    return answer;
  });
  std::string buffer(10, '\0');
  GetOptions options;
  options.if_match = "\"old\"";
  auto got = Client(transport)->GetObject("k", options, buffer);
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(got.status().message().find("changed"), std::string::npos) << got.status().ToString();
}

TEST(S3Client, CompleteMultipartUploadFailingInsideA200IsAnError) {
  auto transport = std::make_shared<ScriptedTransport>([](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.body = "<Error><Code>InvalidPart</Code><Message>part 2 is missing</Message></Error>";
    return answer;
  });
  auto etag = Client(transport)->CompleteMultipartUpload("k", "upload", {{1, "\"a\""}}, false);
  EXPECT_EQ(etag.status().code(), StatusCode::kInvalidArgument) << etag.status().ToString();
  EXPECT_NE(etag.status().message().find("part 2 is missing"), std::string::npos);
}

TEST(S3Reader, WholeObjectReadIsCheckedAgainstTheServersCrc32c) {
  const std::string object = "the bytes the server holds";
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.status = 206;
    answer.headers.Add("Content-Range", "bytes 0-25/26");
    answer.body = object;
    answer.body[3] ^= 1;  // corrupted on the way
    return answer;
  });
  ObjectInfo info;
  info.key = "k";
  info.size = object.size();
  info.version = "\"v\"";
  info.crc32c = crc32c::Value(object);
  Executor executor(2);
  auto reader = MakeS3Reader(Client(transport), info, executor);
  std::string buffer(object.size(), '\0');
  auto read = reader->ReadAt(0, buffer);
  EXPECT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
}

// Opened from a listing, the reader does not know the CRC32C yet: a whole
// object GET asks for it and checks the bytes.
TEST(S3Reader, AWholeObjectReadFromAListingIsCheckedAgainstTheServersCrc32c) {
  const std::string object = "abcdefghijklmnopqrstuvwxyz";
  bool corrupt = false;
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.status = 206;
    answer.headers.Add("Content-Range", "bytes 0-25/26");
    answer.headers.Add("x-amz-checksum-crc32c", crc32c::ToBase64(crc32c::Value(object)));
    answer.body = object;
    if (corrupt) answer.body[3] ^= 1;
    return answer;
  });
  ObjectInfo listed{"k", object.size(), "\"v\"", std::nullopt, false, std::nullopt, {}};
  Executor executor(2);
  auto reader = MakeS3Reader(Client(transport), listed, executor);
  std::string buffer(object.size(), '\0');
  ASSERT_TRUE(reader->ReadAt(0, buffer).ok());
  EXPECT_EQ(buffer, object);
  EXPECT_EQ(transport->requests().at(0).headers.Get("x-amz-checksum-mode").value_or(""), "ENABLED");
  EXPECT_EQ(transport->requests().at(0).headers.Get("if-match").value_or(""), "\"v\"");
  corrupt = true;
  EXPECT_EQ(reader->ReadAt(0, buffer).status().code(), StatusCode::kDataLoss);
}

// A whole object pinned to its ETag is one plain GET (Ceph RGW serves a
// ranged GET with two reads from its OSDs, a plain one with one); a transfer
// that breaks resumes with a Range from the byte it reached. Without an ETag,
// or for part of the object, the read keeps its Range.
TEST(S3Reader, AWholeObjectIsOnePlainGetThatResumesWithARange) {
  const std::string object = std::string(600, 'a') + std::string(400, 'b');
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest& request) {
    ScriptedTransport::Answer answer;
    const std::string range = RangeOf(request);
    if (range.empty()) {
      answer.headers.Add("Content-Length", "1000");
      answer.body = object.substr(0, 600);
      answer.failure = UnavailableError("connection reset");
      return answer;
    }
    unsigned long first = 0, last = 0;
    std::sscanf(range.c_str(), "bytes=%lu-%lu", &first, &last);
    answer.status = 206;
    answer.headers.Add("Content-Range", "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/1000");
    answer.body = object.substr(first, last - first + 1);
    return answer;
  });
  Executor executor(2);
  ObjectInfo info{"k", object.size(), "\"v\"", crc32c::Value(object), false, std::nullopt, {}};
  std::string buffer(object.size(), '\0');
  ASSERT_TRUE(MakeS3Reader(Client(transport), info, executor)->ReadAt(0, buffer).ok());
  EXPECT_EQ(buffer, object);
  auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].headers.Has("range"));
  EXPECT_EQ(requests[0].headers.Get("if-match").value_or(""), "\"v\"");
  EXPECT_EQ(RangeOf(requests[1]), "bytes=600-999");
  EXPECT_EQ(requests[1].headers.Get("if-match").value_or(""), "\"v\"");

  ObjectInfo unversioned = info;
  unversioned.version.clear();
  ASSERT_TRUE(MakeS3Reader(Client(transport), unversioned, executor)->ReadAt(0, buffer).ok());
  EXPECT_EQ(RangeOf(transport->requests().at(2)), "bytes=0-999");
  std::string tail(999, '\0');
  ASSERT_TRUE(MakeS3Reader(Client(transport), info, executor)->ReadAt(1, tail).ok());
  EXPECT_EQ(RangeOf(transport->requests().at(3)), "bytes=1-999");
  EXPECT_EQ(tail, object.substr(1));
}

// A dataset manifest gives a shard's size and CRC32C but no ETag: the
// loader opens it from those (no HEAD), and the size pins the read. A
// Content-Range of another size, or a 416 for a range that was inside the
// object, is FailedPrecondition ("changed since"); a missing one NotFound.
TEST(S3Reader, AnObjectKnownOnlyByItsSizeIsPinnedToIt) {
  std::string object(26, 'z');
  int http_status = 0;  // when set, the server answers this instead
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest& request) {
    if (http_status == 0) return RangedAnswer(request, object);
    ScriptedTransport::Answer answer;
    answer.status = http_status;
    answer.body =
        http_status == 404 ? "<Error><Code>NoSuchKey</Code></Error>" : "<Error><Code>InvalidRange</Code></Error>";
    return answer;
  });
  Executor executor(2);
  ObjectInfo known{"k", 26, "", std::nullopt, false, std::nullopt, {}};
  auto reader = MakeS3Reader(Client(transport), known, executor);
  std::string buffer(26, '\0');
  ASSERT_TRUE(reader->ReadAt(0, buffer).ok());
  EXPECT_EQ(buffer, object);
  EXPECT_EQ(RangeOf(transport->requests().at(0)), "bytes=0-25");
  EXPECT_FALSE(transport->requests().at(0).headers.Has("if-match"));

  object = std::string(40, 'z');  // grown: the first 26 bytes alone would look right
  auto grown = reader->ReadAt(0, buffer);
  ASSERT_EQ(grown.status().code(), StatusCode::kFailedPrecondition) << grown.status().ToString();
  EXPECT_NE(grown.status().message().find("is 40 bytes, not the 26"), std::string::npos) << grown.status().ToString();

  object = std::string(10, 'z');  // shrunk
  auto shrunk = reader->ReadAt(0, buffer);
  ASSERT_EQ(shrunk.status().code(), StatusCode::kFailedPrecondition) << shrunk.status().ToString();
  EXPECT_NE(shrunk.status().message().find("is 10 bytes"), std::string::npos) << shrunk.status().ToString();

  http_status = 416;  // shrunk below the range's first byte
  std::string tail(6, '\0');
  auto before_range = reader->ReadAt(20, tail);
  ASSERT_EQ(before_range.status().code(), StatusCode::kFailedPrecondition) << before_range.status().ToString();
  EXPECT_NE(before_range.status().message().find("shorter than the 26 bytes"), std::string::npos)
      << before_range.status().ToString();

  http_status = 404;
  EXPECT_EQ(reader->ReadAt(0, buffer).status().code(), StatusCode::kNotFound);
}

// Opened from its size alone, the first answer's ETag pins the reads after
// it, as a HEAD's would have: a rewrite of the same size between two reads
// is FailedPrecondition, not a mix of two versions.
TEST(S3Reader, AfterItsFirstAnswerAnObjectKnownBySizeIsPinnedToItsEtag) {
  const std::string object(26, 'q');
  std::string etag = "\"first\"";
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest& request) {
    const std::string if_match = request.headers.Get("if-match").value_or("");
    if (!if_match.empty() && if_match != etag) {
      ScriptedTransport::Answer refused;
      refused.status = 412;
      refused.body = "<Error><Code>PreconditionFailed</Code></Error>";
      return refused;
    }
    ScriptedTransport::Answer answer = RangedAnswer(request, object);
    answer.headers.Add("ETag", etag);
    return answer;
  });
  Executor executor(2);
  ObjectInfo known{"k", object.size(), "", std::nullopt, false, std::nullopt, {}};
  auto reader = MakeS3Reader(Client(transport), known, executor);
  std::string half(13, '\0');
  ASSERT_TRUE(reader->ReadAt(0, half).ok());
  EXPECT_FALSE(transport->requests().at(0).headers.Has("if-match"));
  ASSERT_TRUE(reader->ReadAt(13, half).ok());
  EXPECT_EQ(transport->requests().at(1).headers.Get("if-match").value_or(""), "\"first\"");
  etag = "\"second\"";  // rewritten, same size
  auto after = reader->ReadAt(13, half);
  EXPECT_EQ(after.status().code(), StatusCode::kFailedPrecondition) << after.status().ToString();
  EXPECT_NE(after.status().message().find("changed while it was being read"), std::string::npos)
      << after.status().ToString();
}

// A transfer that breaks resumes pinned to the ETag of the answer it broke
// in, so its two halves are of one version; an answer for an object of
// another size fails, a 200's length counting as its size.
TEST(S3Client, AReadPinnedByItsSizeResumesPinnedToTheFirstAnswersEtag) {
  const std::string object = std::string(600, 'a') + std::string(400, 'b');
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest& request) {
    ScriptedTransport::Answer answer = RangedAnswer(request, object);
    answer.headers.Add("ETag", "\"e1\"");
    if (!request.headers.Has("if-match")) {
      answer.body = answer.body.substr(0, 600);
      answer.failure = UnavailableError("connection reset");
    }
    return answer;
  });
  std::string buffer(object.size(), '\0');
  GetOptions options;
  options.length = buffer.size();
  options.object_size = object.size();
  auto got = Client(transport)->GetObject("k", options, buffer);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(buffer, object);
  EXPECT_EQ(got->etag, "\"e1\"");
  ASSERT_EQ(transport->requests().size(), 2u);
  EXPECT_EQ(RangeOf(transport->requests()[1]), "bytes=600-999");
  EXPECT_EQ(transport->requests()[1].headers.Get("if-match").value_or(""), "\"e1\"");

  auto whole = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ScriptedTransport::Answer answer;  // a 200: the whole object, 1000 bytes
    answer.headers.Add("Content-Length", "1000");
    answer.body = object.substr(0, 10);
    return answer;
  });
  std::string ten(10, '\0');
  GetOptions first_ten;
  first_ten.length = ten.size();
  first_ten.object_size = 10;
  auto grown = Client(whole)->GetObject("k", first_ten, ten);
  EXPECT_EQ(grown.status().code(), StatusCode::kFailedPrecondition) << grown.status().ToString();
}

TEST(S3Reader, LargeReadsAreSplitIntoRangesWrittenInPlace) {
  std::string object(100, '\0');
  for (size_t i = 0; i < object.size(); ++i) object[i] = static_cast<char>('A' + i % 26);
  auto transport = std::make_shared<ScriptedTransport>(
      [&](const HttpRequest& request) { return RangedAnswer(request, object); });
  ResolvedConfig config = LocalConfig();
  config.part_size = 16;  // tiny parts, only for this test
  ObjectInfo info{"k", 100, "\"v\"", std::nullopt, false, std::nullopt, {}};
  Executor executor(3);
  auto reader = MakeS3Reader(Client(transport, config), info, executor);
  std::string buffer(90, '\0');
  auto read = reader->ReadAt(7, buffer);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, 90u);
  EXPECT_EQ(buffer, object.substr(7, 90));
  EXPECT_EQ(transport->requests().size(), 6u);  // ceil(90 / 16)
  EXPECT_EQ(reader->ReadAt(101, buffer).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(*reader->ReadAt(100, buffer), 0u);
}

// What HEAD makes of the checksums an answer carries, besides CRC32C: a
// full-object x-amz-checksum-* of another algorithm, else the MD5 that a
// single-part object's ETag is, unless the answer shows that it cannot be.
std::optional<StoredDigest> DigestOfHead(const std::vector<std::pair<std::string, std::string>>& headers) {
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.headers.Add("Content-Length", "3");
    for (const auto& [name, value] : headers) answer.headers.Add(name, value);
    return answer;
  });
  auto info = Client(transport)->HeadObject("k");
  EXPECT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(transport->requests().at(0).headers.Get("x-amz-checksum-mode").value_or(""), "ENABLED");
  return info.ok() ? info->digest : std::nullopt;
}

TEST(S3Client, ASinglePartEtagIsAnMd5) {
  const std::string md5 = HexEncode(Md5("abc"));
  auto digest = DigestOfHead({{"ETag", "\"" + md5 + "\""}});
  ASSERT_TRUE(digest.has_value());
  EXPECT_EQ(digest->algorithm, DigestAlgorithm::kMd5);
  EXPECT_EQ(digest->base64, Base64Encode(Md5("abc")));
  EXPECT_EQ(digest->source, "ETag");
  // SSE-S3 keeps the MD5; upper-case hex is the same digest.
  EXPECT_TRUE(DigestOfHead({{"ETag", "\"" + md5 + "\""}, {"x-amz-server-side-encryption", "AES256"}}).has_value());
  std::string upper = md5;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(DigestOfHead({{"ETag", "\"" + upper + "\""}}).has_value());
}

TEST(S3Client, EtagsThatAreNotMd5sAreIgnored) {
  const std::string md5 = HexEncode(Md5("abc"));
  EXPECT_FALSE(DigestOfHead({{"ETag", "\"" + md5 + "-2\""}}).has_value()) << "multipart";
  EXPECT_FALSE(DigestOfHead({{"ETag", "\"" + md5.substr(1) + "\""}}).has_value()) << "31 digits";
  EXPECT_FALSE(DigestOfHead({{"ETag", "\"" + md5.substr(1) + "g\""}}).has_value()) << "not hex";
  EXPECT_FALSE(DigestOfHead({{"ETag", "W/\"" + md5 + "\""}}).has_value()) << "weak";
  EXPECT_FALSE(DigestOfHead({{"ETag", "\"" + md5 + "\""}, {"x-amz-server-side-encryption", "aws:kms"}}).has_value());
  EXPECT_FALSE(
      DigestOfHead({{"ETag", "\"" + md5 + "\""}, {"x-amz-server-side-encryption", "aws:kms:dsse"}}).has_value());
  EXPECT_FALSE(DigestOfHead({{"ETag", "\"" + md5 + "\""},
                             {"x-amz-server-side-encryption-customer-algorithm", "AES256"}})
                   .has_value());
}

TEST(S3Client, AFullObjectChecksumIsPreferredToTheEtag) {
  const std::string sha256 = Base64Encode(Sha256("abc"));
  auto digest = DigestOfHead({{"ETag", "\"" + HexEncode(Md5("abc")) + "\""}, {"x-amz-checksum-sha256", sha256},
                              {"x-amz-checksum-type", "FULL_OBJECT"}});
  ASSERT_TRUE(digest.has_value());
  EXPECT_EQ(digest->algorithm, DigestAlgorithm::kSha256);
  EXPECT_EQ(digest->base64, sha256);
  EXPECT_EQ(digest->source, "x-amz-checksum-sha256");

  const std::string crc64 = Base64Encode(DigestOf(DigestAlgorithm::kCrc64Nvme, "abc"));
  digest = DigestOfHead({{"x-amz-checksum-crc64nvme", crc64}});
  ASSERT_TRUE(digest.has_value());
  EXPECT_EQ(digest->algorithm, DigestAlgorithm::kCrc64Nvme);
  EXPECT_EQ(digest->base64, crc64);
}

// A composite checksum (of the parts' checksums) says nothing about the
// bytes without the part boundaries: neither it nor the multipart ETag is used.
TEST(S3Client, CompositeChecksumsAreIgnored) {
  const std::string sha256 = Base64Encode(Sha256("abc"));
  EXPECT_FALSE(DigestOfHead({{"ETag", "\"" + HexEncode(Md5("abc")) + "-3\""}, {"x-amz-checksum-sha256", sha256 + "-3"}})
                   .has_value());
  EXPECT_FALSE(DigestOfHead({{"ETag", "\"" + HexEncode(Md5("abc")) + "-3\""}, {"x-amz-checksum-sha256", sha256},
                             {"x-amz-checksum-type", "COMPOSITE"}})
                   .has_value());
  // The same for CRC32C: no crc32c at all.
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.headers.Add("x-amz-checksum-crc32c", crc32c::ToBase64(crc32c::Value("abc")));
    answer.headers.Add("x-amz-checksum-type", "COMPOSITE");
    return answer;
  });
  auto info = Client(transport)->HeadObject("k");
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->crc32c.has_value());
  // A multipart object (ETag "-N") whose answer does not say FULL_OBJECT: S3
  // makes such checksums COMPOSITE, and moto's HeadObject sends one bare.
  const std::string multipart_etag = "\"" + HexEncode(Md5("abc")) + "-3\"";
  EXPECT_FALSE(DigestOfHead({{"ETag", multipart_etag}, {"x-amz-checksum-sha256", sha256}}).has_value());
  auto bare = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.headers.Add("ETag", multipart_etag);
    answer.headers.Add("x-amz-checksum-crc32c", crc32c::ToBase64(crc32c::Value("abc")));
    return answer;
  });
  info = Client(bare)->HeadObject("k");
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->crc32c.has_value());
  // Said FULL_OBJECT, a multipart object's checksum is of its bytes.
  auto digest = DigestOfHead({{"ETag", multipart_etag}, {"x-amz-checksum-sha256", sha256},
                              {"x-amz-checksum-type", "FULL_OBJECT"}});
  ASSERT_TRUE(digest.has_value());
  EXPECT_EQ(digest->algorithm, DigestAlgorithm::kSha256);
}

// An object the AWS CLI uploaded in one PUT to a server without flexible
// checksums (Ceph RGW): no CRC32C, but its ETag is the MD5 of its bytes.
TEST(S3Reader, AWholeObjectReadIsCheckedAgainstTheMd5OfASinglePartEtag) {
  const std::string object = "written by another tool";
  bool corrupt = true;
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest& request) {
    ScriptedTransport::Answer answer;
    answer.headers.Add("ETag", "\"" + HexEncode(Md5(object)) + "\"");
    answer.body = object;
    if (corrupt) answer.body[3] ^= 1;
    unsigned long first = 0, last = 0;
    if (std::sscanf(RangeOf(request).c_str(), "bytes=%lu-%lu", &first, &last) == 2) {
      answer.status = 206;
      answer.headers.Add("Content-Range", "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                                              std::to_string(object.size()));
      answer.body = answer.body.substr(first, last - first + 1);
    }
    return answer;
  });
  ObjectInfo info{"k", object.size(), "\"" + HexEncode(Md5(object)) + "\"", std::nullopt, false,
                  StoredDigest{DigestAlgorithm::kMd5, Base64Encode(Md5(object)), "ETag"}, {}};
  Executor executor(2);
  auto reader = MakeS3Reader(Client(transport), info, executor);
  EXPECT_TRUE(reader->verifies_whole_reads());
  std::string buffer(object.size(), '\0');
  auto read = reader->ReadAt(0, buffer);
  ASSERT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
  const std::string message = read.status().message();
  EXPECT_NE(message.find("s3://bucket/k"), std::string::npos) << message;
  EXPECT_NE(message.find("MD5 "), std::string::npos) << message;
  EXPECT_NE(message.find(HexEncode(Md5(object))), std::string::npos) << message;
  EXPECT_NE(message.find("single-part ETag"), std::string::npos) << message;
  EXPECT_NE(message.find("read it again"), std::string::npos) << message;
  // A part of it has no checksum to check.
  std::string part(5, '\0');
  EXPECT_TRUE(reader->ReadAt(0, part).ok());
  corrupt = false;
  EXPECT_TRUE(reader->ReadAt(0, buffer).ok());
  EXPECT_EQ(buffer, object);
}

// Opened from a listing (which shows no encryption, so its ETag is not
// trusted), a whole-object GET checks the bytes against what its own answer
// shows: the ETag's MD5 unless the object is encrypted with SSE-KMS.
TEST(S3Reader, AWholeObjectReadFromAListingIsCheckedAgainstTheEtagItsAnswerShows) {
  const std::string object = "abcdefghijklmnopqrstuvwxyz";
  bool kms = false;
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest&) {
    ScriptedTransport::Answer answer;
    answer.headers.Add("Content-Length", std::to_string(object.size()));
    answer.headers.Add("ETag", "\"" + HexEncode(Md5(object)) + "\"");
    if (kms) answer.headers.Add("x-amz-server-side-encryption", "aws:kms");
    answer.body = object;
    answer.body[3] ^= 1;
    return answer;
  });
  ObjectInfo listed{"k", object.size(), "\"" + HexEncode(Md5(object)) + "\"", std::nullopt, false, std::nullopt, {}};
  Executor executor(2);
  auto reader = MakeS3Reader(Client(transport), listed, executor);
  std::string buffer(object.size(), '\0');
  auto read = reader->ReadAt(0, buffer);
  EXPECT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
  EXPECT_NE(read.status().message().find("MD5"), std::string::npos) << read.status().ToString();
  kms = true;  // the ETag is no MD5: nothing to check against
  EXPECT_TRUE(reader->ReadAt(0, buffer).ok());
}

TEST(S3Reader, ALargeWholeReadIsCheckedAgainstAFullObjectSha256) {
  std::string object(100, '\0');
  for (size_t i = 0; i < object.size(); ++i) object[i] = static_cast<char>('A' + i % 26);
  auto transport = std::make_shared<ScriptedTransport>([&](const HttpRequest& request) {
    ScriptedTransport::Answer answer = RangedAnswer(request, object);
    if (RangeOf(request).rfind("bytes=32-", 0) == 0) answer.body[0] ^= 1;
    return answer;
  });
  ResolvedConfig config = LocalConfig();
  config.part_size = 16;  // several ranges in parallel
  ObjectInfo info{"k", 100, "\"v\"", std::nullopt, false,
                  StoredDigest{DigestAlgorithm::kSha256, Base64Encode(Sha256(object)), "x-amz-checksum-sha256"}, {}};
  Executor executor(3);
  std::string buffer(100, '\0');
  auto read = MakeS3Reader(Client(transport, config), info, executor)->ReadAt(0, buffer);
  ASSERT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
  EXPECT_NE(read.status().message().find("SHA-256"), std::string::npos) << read.status().ToString();
  EXPECT_NE(read.status().message().find("x-amz-checksum-sha256"), std::string::npos) << read.status().ToString();
}

// A range that comes back short (here, the object ends before the size it
// had when opened) is DataLoss telling the caller to read again, as on
// every store.
TEST(S3Reader, AShortRangeIsDataLossToReadAgain) {
  const std::string object(30, 'x');  // the server's object: 30 bytes
  auto transport =
      std::make_shared<ScriptedTransport>([&](const HttpRequest& request) { return RangedAnswer(request, object); });
  ObjectInfo info{"k", 60, "\"v\"", std::nullopt, false, std::nullopt, {}};  // opened at 60
  Executor executor(2);
  std::string buffer(20, '\0');
  auto read = MakeS3Reader(Client(transport), info, executor)->ReadAt(20, buffer);
  ASSERT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
  EXPECT_NE(read.status().message().find("read it again"), std::string::npos) << read.status().ToString();
}

// A fake multipart endpoint: hands out an upload id, ETags "\"p<N>\"" for
// parts, and accepts Complete.
ScriptedTransport::Answer MultipartAnswer(const HttpRequest& request) {
  ScriptedTransport::Answer answer;
  if (request.method == "POST" && request.url.find("?uploads") != std::string::npos) {
    answer.body = "<InitiateMultipartUploadResult><UploadId>u-1</UploadId></InitiateMultipartUploadResult>";
  } else if (request.method == "PUT") {
    const size_t at = request.url.find("partNumber=");
    answer.headers.Add("ETag", "\"p" + request.url.substr(at + 11, request.url.find('&', at) - at - 11) + "\"");
  } else if (request.method == "POST") {
    answer.body = "<CompleteMultipartUploadResult><ETag>\"done-8\"</ETag></CompleteMultipartUploadResult>";
  }
  return answer;
}

TEST(S3Writer, PartsInFlightOnAOneThreadPoolUnderATightBudgetDoNotDeadlock) {
  auto transport = std::make_shared<ScriptedTransport>(MultipartAnswer);
  ResolvedConfig config = LocalConfig();
  config.part_size = 1 << 20;
  auto client = Client(transport, config);
  Executor pool(1);
  ByteBudget budget(2 << 20);  // two parts
  std::promise<Result<ObjectInfo>> done;
  // The writer runs on the pool's only thread, where its own part uploads
  // queue up: waiting for budget must run them rather than block.
  pool.Submit([&] {
    auto writer = MakeS3Writer(client, "big", {}, {}, pool, budget);
    Status status;
    for (int i = 0; i < 8 && status.ok(); ++i) status = writer->Append(std::string(1 << 20, static_cast<char>('a' + i)));
    done.set_value(status.ok() ? writer->Close() : Result<ObjectInfo>(status));
  });
  Result<ObjectInfo> result = done.get_future().get();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->size, 8u << 20);
  EXPECT_EQ(result->version, "\"done-8\"");
  EXPECT_EQ(budget.in_use(), 0u);
  auto requests = transport->requests();
  ASSERT_EQ(requests.size(), 10u);  // create, 8 parts, complete
  for (int part = 1; part <= 8; ++part) {
    EXPECT_EQ(requests[part].headers.Get("x-amz-content-sha256").value_or(""),
              Sha256Hex(std::string(1 << 20, static_cast<char>('a' + part - 1))))
        << part;
  }
  EXPECT_NE(requests.back().url.find("uploadId=u-1"), std::string::npos);
}

TEST(S3Writer, AFailedPartAbortsTheUpload) {
  auto transport = std::make_shared<ScriptedTransport>([](const HttpRequest& request) {
    if (request.method == "PUT" && request.url.find("partNumber=2") != std::string::npos) {
      ScriptedTransport::Answer answer;
      answer.status = 400;
      answer.body = "<Error><Code>BadDigest</Code></Error>";
      return answer;
    }
    return MultipartAnswer(request);
  });
  ResolvedConfig config = LocalConfig();
  config.part_size = 1 << 20;
  Executor pool(2);
  ByteBudget budget(64 << 20);
  auto writer = MakeS3Writer(Client(transport, config), "big", {}, {}, pool, budget);
  Status status;
  for (int i = 0; i < 4 && status.ok(); ++i) status = writer->Append(std::string(1 << 20, 'x'));
  if (status.ok()) status = writer->Close().status();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
  writer.reset();  // an Append that failed leaves the abort to Abort() or the destructor
  auto requests = transport->requests();
  EXPECT_EQ(requests.back().method, "DELETE");  // AbortMultipartUpload
  EXPECT_NE(requests.back().url.find("uploadId=u-1"), std::string::npos);
  EXPECT_EQ(budget.in_use(), 0u);
}

}  // namespace
}  // namespace spool::s3
