// The round-trip property, the sharded writer and reference files on S3
// (the Ceph RGW of the ceph_rgw fixture), opened by URL like a user would.
#include <unistd.h>

#include <gtest/gtest.h>

#include "spool/core/storage/registry.h"
#include "spool/records/manifest.h"
#include "spool/records/sharded_writer.h"
#include "spool/register_backends.h"
#include "tests/records/round_trip.h"

namespace spool::records {
namespace {

class S3RecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterAllBackends();
    const char* bucket = std::getenv("SPOOL_RECORDS_S3_BUCKET");
    ASSERT_NE(bucket, nullptr) << "run through ctest: its records_s3_bucket fixture creates the bucket";
    prefix_ = "records-test-" + std::to_string(getpid()) + "/";
    auto location = OpenLocation("s3://" + std::string(bucket) + "/" + prefix_);
    ASSERT_TRUE(location.ok()) << location.status().ToString();
    store_ = location->store;
  }
  void TearDown() override {
    if (!store_) return;
    ListOptions list;
    list.prefix = prefix_;
    auto listing = ListAll(*store_, list);
    ASSERT_TRUE(listing.ok()) << listing.status().ToString();
    std::vector<std::string> keys;
    for (const auto& object : listing->objects) keys.push_back(object.key);
    if (!keys.empty()) {
      EXPECT_TRUE(store_->DeleteMany(keys).ok());
    }
  }

  std::shared_ptr<ObjectStore> store_;
  std::string prefix_;
};

TEST_F(S3RecordsTest, RandomRecordsRoundTrip) { testing::RoundTrip(*store_, prefix_ + "rt/", 7, 10); }

TEST_F(S3RecordsTest, ShardedDatasetUploadsInParallelAndReadsBack) {
  ShardedWriterOptions options;
  options.num_shards = 4;
  options.compression = Compression::kGzip;
  auto writer = ShardedWriter::Open(*store_, prefix_ + "ds/train", options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  std::mt19937_64 rng(5);
  std::vector<std::string> records;
  for (int i = 0; i < 400; ++i) records.push_back(testing::RandomBytes(rng, 100 << 10));  // 40 MB, multipart
  for (const auto& r : records) SPOOL_ASSERT_OK((*writer)->Write(r));
  auto manifest = (*writer)->Close();
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();

  const std::string manifest_key = ManifestKeyFor(prefix_ + "ds/train");
  auto read_back = ReadManifest(*store_, manifest_key);
  ASSERT_TRUE(read_back.ok()) << read_back.status().ToString();
  EXPECT_EQ(read_back->total_records(), 400u);
  const auto keys = ShardKeys(manifest_key, *read_back);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(store_->Stat(keys[s]).value().size, read_back->shards(s).bytes());
    auto reader = RecordReader::Open(*store_, keys[s]).value();
    std::string record;
    size_t j = 0;
    while (reader->Next(&record).value()) {
      EXPECT_TRUE(record == records[s + 4 * j]) << keys[s] << " record " << j;
      ++j;
    }
    EXPECT_EQ(j, read_back->shards(s).records());
  }
}

TEST_F(S3RecordsTest, ReferenceFilesReadTheSame) {
  const char* files[] = {"files/tf_written/tfx_eval_chicago_taxi.tfevents",
                         "files/tf_written_gzip/tfx_sequence_train.tfrecord.gz",
                         "files/edge_cases/large_record_300000.tfrecord.zlib"};
  for (const char* path : files) {
    SCOPED_TRACE(path);
    const std::string bytes = testing::ReadFile(testing::DataDir() / path);
    const std::string key = prefix_ + path;
    ASSERT_TRUE(WriteAll(*store_, key, bytes).ok());
    RecordReaderOptions options;
    options.io.chunk_size = 64 << 10;  // many ranged reads in flight
    auto reader = RecordReader::Open(*store_, key, options).value();
    auto local = RecordReader::Open(*OpenLocation((testing::DataDir() / path).string())->store,
                                    (testing::DataDir() / path).string().substr(1))
                     .value();
    std::string a;
    std::string b;
    size_t count = 0;
    while (true) {
      auto more = reader->Next(&a);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      ASSERT_EQ(*more, local->Next(&b).value());
      if (!*more) break;
      EXPECT_TRUE(a == b);
      ++count;
    }
    EXPECT_GT(count, 0u);
  }
}

}  // namespace
}  // namespace spool::records
