// Interoperability with the AWS CLI (/usr/bin/aws, Debian's awscli) on the
// local Ceph RGW: what spool writes the CLI reads byte for byte, and the
// other way round, single PUTs and multipart uploads alike.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "spool/core/bytes.h"
#include "tests/s3/s3_test_store.h"

namespace spool::s3 {
namespace {

namespace fs = std::filesystem;
using testing::OpenTestStore;
using testing::TestBucket;
using testing::UniquePrefix;

std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(random());
  return out;
}

class AwsCliInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "spool-aws-cli-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    folder_ = pattern;
  }
  void TearDown() override { fs::remove_all(folder_); }

  // Runs `aws <arguments>` against the fixture's endpoint; returns its exit status.
  int Aws(const std::string& arguments) {
    const char* endpoint = std::getenv("AWS_ENDPOINT_URL");
    std::string command = "/usr/bin/aws --endpoint-url " + std::string(endpoint ? endpoint : "") + " " + arguments +
                          " >" + (folder_ / "aws.log").string() + " 2>&1";
    int status = std::system(command.c_str());
    if (status != 0) {
      std::ifstream log(folder_ / "aws.log");
      std::stringstream text;
      text << log.rdbuf();
      ADD_FAILURE() << command << " failed: " << text.str();
    }
    return status;
  }

  std::string ReadFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  void WriteFile(const fs::path& path, const std::string& data) {
    std::ofstream out(path, std::ios::binary);
    out << data;
  }

  fs::path folder_;
};

TEST_F(AwsCliInterop, AwsCliReadsWhatSpoolWrites) {
  S3Options options;
  options.part_size = 5 * kMiB;
  auto store = OpenTestStore(options);
  const std::string prefix = UniquePrefix("interop-spool-writes");
  const std::string small = RandomBytes(1000, 1);
  const std::string large = RandomBytes(17 * kMiB + 3, 2);  // four parts
  ASSERT_TRUE(WriteAll(*store, prefix + "small", small).ok());
  ASSERT_TRUE(WriteAll(*store, prefix + "large", large).ok());

  const std::string url = "s3://" + TestBucket() + "/" + prefix;
  ASSERT_EQ(Aws("s3 cp " + url + "small " + (folder_ / "small").string()), 0);
  ASSERT_EQ(Aws("s3 cp " + url + "large " + (folder_ / "large").string()), 0);
  EXPECT_TRUE(ReadFile(folder_ / "small") == small);
  EXPECT_TRUE(ReadFile(folder_ / "large") == large);

  ASSERT_TRUE(store->DeleteMany({prefix + "small", prefix + "large"}).ok());
}

TEST_F(AwsCliInterop, SpoolReadsWhatAwsCliWrites) {
  auto store = OpenTestStore();
  const std::string prefix = UniquePrefix("interop-aws-writes");
  const std::string small = RandomBytes(5000, 3);
  const std::string large = RandomBytes(21 * kMiB + 1, 4);  // over the CLI's 8 MiB multipart threshold
  WriteFile(folder_ / "small", small);
  WriteFile(folder_ / "large", large);
  const std::string url = "s3://" + TestBucket() + "/" + prefix;
  ASSERT_EQ(Aws("s3 cp " + (folder_ / "small").string() + " " + url + "small"), 0);
  ASSERT_EQ(Aws("s3 cp " + (folder_ / "large").string() + " " + url + "large"), 0);

  auto info = store->Stat(prefix + "large");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_NE(info->version.find('-'), std::string::npos) << "expected a multipart ETag, got " << info->version;
  EXPECT_TRUE(ReadAll(*store, prefix + "small").value_or("") == small);
  EXPECT_TRUE(ReadAll(*store, prefix + "large").value_or("") == large);

  ASSERT_TRUE(store->DeleteMany({prefix + "small", prefix + "large"}).ok());
}

}  // namespace
}  // namespace spool::s3
