// Presigned URLs on Ceph RGW: a URL works for anyone until it expires, and
// not a second later; it carries no secret.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "spool/core/http/transport.h"
#include "tests/s3/s3_test_store.h"

namespace spool::s3 {
namespace {

using namespace std::chrono_literals;

// GETs `url` with no credentials at all; returns the status and the body.
std::pair<int, std::string> Fetch(const std::string& url) {
  static auto transport = MakeCurlTransport(HttpOptions{});
  HttpRequest request;
  request.url = url;
  std::string body;
  StringSink sink(&body);
  auto response = transport->Send(request, &sink);
  EXPECT_TRUE(response.ok()) << response.status().ToString();
  if (!response.ok()) return {0, ""};
  return {response->status, response->ok() ? body : response->error_body};
}

TEST(PresignTest, UrlWorksUntilItExpiresAndHoldsNoSecret) {
  auto store = testing::OpenTestStore();
  const std::string key = testing::UniquePrefix("presign") + "object.bin";
  const std::string content = "presigned content";
  ASSERT_TRUE(WriteAll(*store, key, content).ok());

  const auto signed_at = std::chrono::steady_clock::now();
  auto short_lived = store->client().PresignGet(key, 3s);
  auto long_lived = store->client().PresignGet(key, 1h);
  ASSERT_TRUE(short_lived.ok()) << short_lived.status().ToString();
  ASSERT_TRUE(long_lived.ok()) << long_lived.status().ToString();
  EXPECT_NE(short_lived->find("X-Amz-Expires=3"), std::string::npos) << *short_lived;
  EXPECT_NE(long_lived->find("X-Amz-Expires=3600"), std::string::npos) << *long_lived;
  const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ(short_lived->find(secret), std::string::npos) << "the presigned URL holds the secret key";

  auto [status, body] = Fetch(*short_lived);
  EXPECT_EQ(status, 200) << body;
  EXPECT_EQ(body, content);

  // SigV4 expiry has one-second resolution: two seconds past it is expired.
  std::this_thread::sleep_until(signed_at + 5s);
  auto [expired_status, expired_body] = Fetch(*short_lived);
  EXPECT_EQ(expired_status, 403) << "an expired presigned URL still answered: " << expired_body;
  auto [still_status, still_body] = Fetch(*long_lived);
  EXPECT_EQ(still_status, 200) << still_body;
  EXPECT_EQ(still_body, content);

  // A tampered URL (another key) is refused.
  std::string tampered = *long_lived;
  tampered.replace(tampered.find("object.bin"), 10, "object.bix");
  EXPECT_EQ(Fetch(tampered).first, 403);
  EXPECT_TRUE(store->Delete(key).ok());
}

}  // namespace
}  // namespace spool::s3
