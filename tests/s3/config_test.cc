// Resolving endpoint, region, addressing style, payload signing, CA bundle
// and part sizes from options, the environment and the profile.
#include "spool/s3/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "spool/s3/crypto.h"
#include "spool/s3/profile_files.h"
#include "spool/s3/s3_writer.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::s3 {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(folder_.empty());
    env_ = {{"HOME", folder_.string()}};
  }

  void WriteConfig(const std::string& text) { test_support::WriteFile(folder_ / ".aws" / "config", text); }

  ResolvedConfig Resolve(const S3Options& options = {}, const std::string& bucket = "bucket") {
    auto config = ResolveConfig(options, bucket, Env::Fixed(env_));
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    return config.ok() ? *config : ResolvedConfig{};
  }

  const test_support::TempDir temp_{"spool-config"};
  const fs::path folder_ = temp_.path();
  std::map<std::string, std::string> env_;
};

TEST(Endpoint, Parses) {
  auto local = ParseEndpoint("http://127.0.0.1:47480");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->scheme, "http");
  EXPECT_EQ(local->host, "127.0.0.1");
  EXPECT_EQ(local->port, 47480);
  EXPECT_EQ(local->HostHeader(), "127.0.0.1:47480");
  auto aws = ParseEndpoint("HTTPS://s3.eu-west-1.amazonaws.com:443/");
  ASSERT_TRUE(aws.ok());
  EXPECT_EQ(aws->port, 0);  // the default port is left out of Host
  EXPECT_EQ(aws->ToString(), "https://s3.eu-west-1.amazonaws.com");
  auto ipv6 = ParseEndpoint("http://[::1]:9000");
  ASSERT_TRUE(ipv6.ok());
  EXPECT_EQ(ipv6->host, "[::1]");
  EXPECT_EQ(ipv6->port, 9000);
  for (const char* bad : {"127.0.0.1:9000", "ftp://host", "http://", "http://host:port", "http://host/path"}) {
    EXPECT_EQ(ParseEndpoint(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(ConfigTest, AwsDefaults) {
  ResolvedConfig config = Resolve();
  EXPECT_EQ(config.region, "us-east-1");
  EXPECT_EQ(config.endpoint.ToString(), "https://s3.us-east-1.amazonaws.com");
  EXPECT_FALSE(config.custom_endpoint);
  EXPECT_FALSE(config.path_style);    // virtual-hosted on AWS
  // https: signed where SHA-256 is the cheaper digest, else UNSIGNED-PAYLOAD with Content-MD5.
  EXPECT_EQ(config.sign_payload, HasSha256Instructions());
  EXPECT_EQ(config.concurrency, kDefaultConcurrency);
}

TEST_F(ConfigTest, RegionPrecedence) {
  WriteConfig("[default]\nregion = eu-central-1\n");
  EXPECT_EQ(Resolve().region, "eu-central-1");
  env_["AWS_DEFAULT_REGION"] = "eu-west-2";
  EXPECT_EQ(Resolve().region, "eu-west-2");
  env_["AWS_REGION"] = "eu-west-3";
  EXPECT_EQ(Resolve().region, "eu-west-3");
  EXPECT_EQ(Resolve().endpoint.host, "s3.eu-west-3.amazonaws.com");
  S3Options options;
  options.region = "ap-south-1";
  EXPECT_EQ(Resolve(options).region, "ap-south-1");
}

TEST_F(ConfigTest, EndpointPrecedence) {
  WriteConfig("[default]\nendpoint_url = http://profile:1\n");
  EXPECT_EQ(Resolve().endpoint.ToString(), "http://profile:1");
  env_["AWS_ENDPOINT_URL"] = "http://general:2";
  EXPECT_EQ(Resolve().endpoint.ToString(), "http://general:2");
  env_["AWS_ENDPOINT_URL_S3"] = "http://s3-specific:3";
  EXPECT_EQ(Resolve().endpoint.ToString(), "http://s3-specific:3");
  S3Options options;
  options.endpoint_url = "https://option:4";
  ResolvedConfig config = Resolve(options);
  EXPECT_EQ(config.endpoint.ToString(), "https://option:4");
  EXPECT_TRUE(config.custom_endpoint);
}

TEST_F(ConfigTest, ProfileServiceEndpointAndAddressingStyle) {
  WriteConfig("[profile minio]\nregion = local\ns3 =\n  endpoint_url = http://minio:9000\n  addressing_style = virtual\n");
  S3Options options;
  options.profile = "minio";
  ResolvedConfig config = Resolve(options);
  EXPECT_EQ(config.region, "local");
  EXPECT_EQ(config.endpoint.ToString(), "http://minio:9000");
  EXPECT_FALSE(config.path_style);  // the profile asked for virtual-hosted
}

TEST_F(ConfigTest, UnknownExplicitProfileIsAnError) {
  S3Options options;
  options.profile = "nope";
  auto config = ResolveConfig(options, "bucket", Env::Fixed(env_));
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("nope"), std::string::npos);
}

TEST_F(ConfigTest, PathStyleRules) {
  EXPECT_TRUE(Resolve({}, "with.dots").path_style);
  env_["AWS_ENDPOINT_URL"] = "https://minio.example.com";
  EXPECT_TRUE(Resolve().path_style);  // custom endpoint
  S3Options virtual_hosted;
  virtual_hosted.addressing = AddressingStyle::kVirtual;
  EXPECT_FALSE(Resolve(virtual_hosted).path_style);
  env_.erase("AWS_ENDPOINT_URL");
  S3Options forced;
  forced.addressing = AddressingStyle::kPath;
  EXPECT_TRUE(Resolve(forced).path_style);
}

TEST_F(ConfigTest, PayloadSigningFollowsTheSchemeAndTheCpu) {
  env_["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000";
  EXPECT_TRUE(Resolve().sign_payload);
  S3Options unsigned_payload;
  unsigned_payload.payload_signing = PayloadSigning::kUnsigned;
  EXPECT_FALSE(Resolve(unsigned_payload).sign_payload);

  env_["AWS_ENDPOINT_URL"] = "https://minio.example.com";
  EXPECT_EQ(Resolve().sign_payload, HasSha256Instructions());
  S3Options signed_payload;
  signed_payload.payload_signing = PayloadSigning::kSigned;
  EXPECT_TRUE(Resolve(signed_payload).sign_payload);
  EXPECT_FALSE(Resolve(unsigned_payload).sign_payload);
}

// The detection agrees with what the kernel reports for this CPU.
TEST(Sha256InstructionsTest, MatchCpuinfo) {
#if defined(__x86_64__) && defined(__linux__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool sha_ni = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      sha_ni = (line + " ").find(" sha_ni ") != std::string::npos;
      break;
    }
  }
  EXPECT_EQ(HasSha256Instructions(), sha_ni);
#else
  GTEST_SKIP() << "checked against /proc/cpuinfo on x86-64 Linux only";
#endif
}

TEST_F(ConfigTest, CaBundlePrecedence) {
  WriteConfig("[default]\nca_bundle = /profile.pem\n");
  EXPECT_EQ(Resolve().ca_bundle, "/profile.pem");
  env_["AWS_CA_BUNDLE"] = "/env.pem";
  EXPECT_EQ(Resolve().ca_bundle, "/env.pem");
  S3Options options;
  options.ca_bundle = "/option.pem";
  EXPECT_EQ(Resolve(options).ca_bundle, "/option.pem");
}

TEST_F(ConfigTest, PartSizeOutsideS3LimitsIsAnError) {
  S3Options options;
  options.part_size = 1 << 20;
  EXPECT_EQ(ResolveConfig(options, "b", Env::Fixed(env_)).status().code(), StatusCode::kInvalidArgument);
}

TEST(PartSizes, DefaultFitsTheExpectedSizeInTenThousandParts) {
  EXPECT_EQ(DefaultPartSize(0), kDefaultPartSize);
  EXPECT_EQ(DefaultPartSize(80'000ull << 20), kDefaultPartSize);
  const uint64_t five_tib = 5ull << 40;
  EXPECT_EQ(DefaultPartSize(five_tib), 525ull << 20);
  EXPECT_GE(DefaultPartSize(five_tib) * kMaxParts, five_tib);
}

TEST(PartSizes, UnknownSizeGrowsPartsSoFiveTiBFits) {
  EXPECT_EQ(PartSizeFor(0, 0, std::nullopt), 8ull << 20);
  EXPECT_EQ(PartSizeFor(999, 0, std::nullopt), 8ull << 20);
  EXPECT_EQ(PartSizeFor(1000, 0, std::nullopt), 16ull << 20);
  uint64_t total = 0;
  for (int i = 0; i < kMaxParts; ++i) total += PartSizeFor(i, 0, std::nullopt);
  EXPECT_GE(total, 5ull << 40);
  EXPECT_EQ(PartSizeFor(5000, 6ull << 20, std::nullopt), 6ull << 20);  // configured wins
  EXPECT_EQ(PartSizeFor(0, 0, 1ull << 40), DefaultPartSize(1ull << 40));
}

TEST(ProfileFiles, IniWithCommentsAndNestedBlocks) {
  auto sections = ParseIni(
      "# comment\n[default]\nregion = us-west-2 \n; another\n[profile x]\ns3 =\n  max_concurrent_requests = 4\n"
      "output=json\n");
  EXPECT_EQ(sections["default"]["region"], "us-west-2");
  EXPECT_EQ(sections["profile x"]["s3.max_concurrent_requests"], "4");
  EXPECT_EQ(sections["profile x"]["output"], "json");
}

}  // namespace
}  // namespace spool::s3
