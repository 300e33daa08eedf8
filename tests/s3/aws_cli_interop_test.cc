// Interoperability with the AWS CLI (/usr/bin/aws, Debian's awscli) on the
// local Ceph RGW: what spool writes the CLI reads byte for byte, and the
// other way round, single PUTs and multipart uploads alike.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "spool/core/bytes.h"
#include "tests/s3/s3_test_store.h"
#include "tests/support/bytes.h"
#include "tests/support/env.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::s3 {
namespace {

namespace fs = std::filesystem;
using test_support::DeterministicBytes;
using test_support::ReadFile;
using test_support::WriteFile;
using testing::OpenTestStore;
using testing::TestBucket;
using testing::UniquePrefix;

class AwsCliInterop : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(folder_.empty()); }

  // Runs `aws <arguments>` against the fixture's endpoint; returns its exit status.
  int Aws(const std::string& arguments) {
    std::string command = "/usr/bin/aws --endpoint-url " + test_support::GetEnv("AWS_ENDPOINT_URL") + " " + arguments +
                          " >" + (folder_ / "aws.log").string() + " 2>&1";
    int status = std::system(command.c_str());
    if (status != 0) ADD_FAILURE() << command << " failed: " << ReadFile(folder_ / "aws.log");
    return status;
  }

  const test_support::TempDir temp_{"spool-aws-cli"};
  const fs::path folder_ = temp_.path();
};

TEST_F(AwsCliInterop, AwsCliReadsWhatSpoolWrites) {
  S3Options options;
  options.part_size = 5 * kMiB;
  auto store = OpenTestStore(options);
  const std::string prefix = UniquePrefix("interop-spool-writes");
  const std::string small = DeterministicBytes(1, 1000);
  const std::string large = DeterministicBytes(2, 17 * kMiB + 3);  // four parts
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
  const std::string small = DeterministicBytes(3, 5000);
  const std::string large = DeterministicBytes(4, 21 * kMiB + 1);  // over the CLI's 8 MiB multipart threshold
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
