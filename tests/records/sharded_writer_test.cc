// ShardedWriter: layouts, parallel shards, the manifest, atomicity.
#include "spool/records/sharded_writer.h"

#include <set>

#include <gtest/gtest.h>

#include "spool/core/key_fanout.h"
#include "spool/core/storage/memory_store.h"
#include "spool/records/manifest.h"
#include "spool/records/record_reader.h"
#include "tests/records/test_util.h"

namespace spool::records {
namespace {

std::vector<std::string> ReadShard(ObjectStore& store, const std::string& key) {
  auto reader = RecordReader::Open(store, key).value();
  std::vector<std::string> out;
  std::string record;
  while (reader->Next(&record).value()) out.push_back(record);
  return out;
}

class ShardedWriterTest : public ::testing::Test {
 protected:
  ShardedWriterTest() : store_("records-sharded-test") { MemoryStore::ClearBucket("records-sharded-test"); }
  MemoryStore store_;
};

TEST_F(ShardedWriterTest, FixedCountRoundRobinWithManifest) {
  ShardedWriterOptions options;
  options.num_shards = 4;
  options.batch_bytes = 100;  // many batches per shard
  options.compression = Compression::kGzip;
  auto writer = ShardedWriter::Open(store_, "data/train", options).value();
  for (int i = 0; i < 1001; ++i) SPOOL_ASSERT_OK(writer->Write("record " + std::to_string(i)));
  // Nothing is visible before Close.
  EXPECT_EQ(store_.Stat("data/train-00000-of-00004.tfrecord.gz").status().code(), StatusCode::kNotFound);
  auto manifest = writer->Close();
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->total_records(), 1001u);
  ASSERT_EQ(manifest->shards_size(), 4);
  EXPECT_EQ(manifest->shards(3).name(), "train-00003-of-00004.tfrecord.gz");
  EXPECT_EQ(manifest->compression(), "GZIP");

  auto read_back = ReadManifest(store_, "data/train.manifest.json");
  ASSERT_TRUE(read_back.ok()) << read_back.status().ToString();
  const auto keys = ShardKeys("data/train.manifest.json", *read_back);
  for (int s = 0; s < 4; ++s) {
    const std::string stored = ReadAll(store_, keys[s]).value();
    EXPECT_EQ(read_back->shards(s).bytes(), stored.size());
    EXPECT_EQ(read_back->shards(s).crc32c(), crc32c::Value(stored));
    auto records = ReadShard(store_, keys[s]);
    EXPECT_EQ(read_back->shards(s).records(), records.size());
    // Round robin, in order within each shard.
    for (size_t j = 0; j < records.size(); ++j) EXPECT_EQ(records[j], "record " + std::to_string(s + 4 * j));
  }
  EXPECT_EQ(read_back->shards(0).records(), 251u);
}

// Prefix fan-out: shard i goes into folder FanoutLabel(i, N) below the
// prefix, the N folders are distinct, and the manifest names them, so a
// reader of the manifest gets the same shards with the same records.
TEST_F(ShardedWriterTest, PrefixFanoutSpreadsShardsOverDistinctFolders) {
  EXPECT_EQ(FanoutLabel(5, 0), "");
  EXPECT_EQ(FanoutLabel(5, 1), "");
  std::set<std::string> labels;
  for (int i = 0; i < 256; ++i) labels.insert(FanoutLabel(i, 256));
  EXPECT_EQ(labels.size(), 256u);
  EXPECT_EQ(FanoutLabel(3, 4096).size(), 3u);
  EXPECT_EQ(FanoutLabel(7, 16), FanoutLabel(23, 16));  // 23 % 16 == 7

  const std::string label = FanoutLabel(17, 16);
  EXPECT_EQ(ShardedWriter::ShardKey("data/train", 17, 1024, ".tfrecord", Compression::kNone, 16),
            "data/train/" + label + "/train-00017-of-01024.tfrecord");
  EXPECT_EQ(ShardedWriter::ShardKey("train", 17, 0, ".tfrecord", Compression::kGzip, 16),
            "train/" + label + "/train-00017.tfrecord.gz");

  for (const bool rolled : {false, true}) {
    SCOPED_TRACE(rolled ? "rolled shards" : "a fixed shard count");
    const std::string plain_prefix = rolled ? "r/plain" : "f/plain";
    const std::string fanned_prefix = rolled ? "r/fanned" : "f/fanned";
    ShardedWriterOptions options;
    if (rolled) {
      options.max_shard_records = 7;
    } else {
      options.num_shards = 12;
    }
    options.write_index = true;
    auto plain = ShardedWriter::Open(store_, plain_prefix, options).value();
    options.prefix_fanout = 5;
    auto fanned = ShardedWriter::Open(store_, fanned_prefix, options).value();
    for (int i = 0; i < 80; ++i) {
      SPOOL_ASSERT_OK(plain->Write("record " + std::to_string(i)));
      SPOOL_ASSERT_OK(fanned->Write("record " + std::to_string(i)));
    }
    const DatasetManifest plain_manifest = plain->Close().value();
    SPOOL_ASSERT_OK(fanned->Close().status());
    const std::string manifest_key = ManifestKeyFor(fanned_prefix);
    const DatasetManifest manifest = ReadManifest(store_, manifest_key).value();
    ASSERT_EQ(manifest.shards_size(), 12);
    ASSERT_EQ(plain_manifest.shards_size(), 12);
    const auto keys = ShardKeys(manifest_key, manifest);
    const auto plain_keys = ShardKeys(ManifestKeyFor(plain_prefix), plain_manifest);
    std::set<std::string> folders;
    for (int s = 0; s < manifest.shards_size(); ++s) {
      const std::string folder = fanned_prefix + "/" + FanoutLabel(s, 5) + "/";
      ASSERT_TRUE(keys[s].starts_with(folder)) << keys[s];
      // The shard's own name is unchanged, and so are its records.
      EXPECT_EQ(keys[s].substr(folder.size()), "fanned" + plain_keys[s].substr(plain_prefix.size()));
      EXPECT_EQ(manifest.shards(s).index(), manifest.shards(s).name() + ".idx");
      EXPECT_EQ(ReadShard(store_, keys[s]), ReadShard(store_, plain_keys[s]));
      folders.insert(folder);
    }
    EXPECT_EQ(folders.size(), 5u);
    ListOptions list;
    list.prefix = fanned_prefix + "/";
    list.delimiter = "/";
    EXPECT_EQ(ListAll(store_, list).value().common_prefixes.size(), 5u);
  }

  ShardedWriterOptions too_many;
  too_many.num_shards = 2;
  too_many.prefix_fanout = kMaxPrefixFanout + 1;
  EXPECT_EQ(ShardedWriter::Open(store_, "bad/ds", too_many).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ShardedWriterTest, KeyHashSendsAKeyAlwaysToOneShard) {
  ShardedWriterOptions options;
  options.num_shards = 3;
  options.assignment = ShardAssignment::kKeyHash;
  auto writer = ShardedWriter::Open(store_, "k/ds", options).value();
  for (int i = 0; i < 300; ++i) SPOOL_ASSERT_OK(writer->Write("user" + std::to_string(i % 10), std::to_string(i)));
  EXPECT_EQ(writer->Write("no key").code(), StatusCode::kInvalidArgument);
  auto manifest = writer->Close().value();
  std::set<int> seen_in[10];
  for (int s = 0; s < 3; ++s) {
    for (const auto& record : ReadShard(store_, ShardKeys("k/ds.manifest.json", manifest)[s])) {
      seen_in[std::stoi(record) % 10].insert(s);
    }
  }
  for (const auto& shards : seen_in) EXPECT_EQ(shards.size(), 1u);
}

TEST_F(ShardedWriterTest, RollsBySizeOrCountWithIndexes) {
  ShardedWriterOptions options;
  options.max_shard_records = 10;
  options.write_index = true;
  auto writer = ShardedWriter::Open(store_, "roll", options).value();
  for (int i = 0; i < 25; ++i) SPOOL_ASSERT_OK(writer->Write(std::string(100, 'a' + i % 26)));
  auto manifest = writer->Close().value();
  ASSERT_EQ(manifest.shards_size(), 3);
  EXPECT_EQ(manifest.shards(0).name(), "roll-00000.tfrecord");
  EXPECT_EQ(manifest.shards(2).name(), "roll-00002.tfrecord");
  EXPECT_EQ(manifest.shards(2).records(), 5u);
  EXPECT_EQ(manifest.shards(1).index(), "roll-00001.tfrecord.idx");
  EXPECT_EQ(RecordIndex::Load(store_, "roll-00001.tfrecord.idx", manifest.shards(1).bytes()).value().size(), 10u);

  ShardedWriterOptions by_size;
  by_size.max_shard_bytes = 1000;  // 8 records of 116 framed bytes
  auto sized = ShardedWriter::Open(store_, "sized", by_size).value();
  for (int i = 0; i < 20; ++i) SPOOL_ASSERT_OK(sized->Write(std::string(100, 'x')));
  auto sized_manifest = sized->Close().value();
  ASSERT_EQ(sized_manifest.shards_size(), 3);
  EXPECT_EQ(sized_manifest.shards(0).records(), 8u);
  EXPECT_LE(sized_manifest.shards(0).bytes(), 1000u);
}

TEST_F(ShardedWriterTest, ManifestRecordsTheExampleSchema) {
  ShardedWriterOptions options;
  options.num_shards = 2;
  auto writer = ShardedWriter::Open(store_, "ex", options).value();
  for (int i = 0; i < 10; ++i) {
    tensorflow::Example example;
    SetInt64s(example, "label", {i});
    SetFloats(example, "score", {0.5f});
    if (i == 3) SetBytes(example, "score", {"oops"});
    SPOOL_ASSERT_OK(writer->WriteExample(example));
  }
  auto manifest = writer->Close().value();
  ASSERT_EQ(manifest.schema().features_size(), 2);
  EXPECT_EQ(manifest.schema().message_type(), "tensorflow.Example");
  EXPECT_EQ(manifest.schema().features(0).name(), "label");
  EXPECT_EQ(manifest.schema().features(0).kind(), "int64_list");
  EXPECT_EQ(manifest.schema().features(1).kind(), "mixed");
  const std::string json = ReadAll(store_, "ex.manifest.json").value();
  EXPECT_NE(json.find("\"format_version\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\": \"ex-00001-of-00002.tfrecord\""), std::string::npos) << json;
}

// A level only means something for GZIP/ZLIB: refused for uncompressed
// shards and files (from options or the key's extension), nothing written.
TEST_F(ShardedWriterTest, ACompressionLevelNeedsCompression) {
  ShardedWriterOptions options;
  options.num_shards = 2;
  options.compression_level = Deflater::kFastLevel;
  Status refused = ShardedWriter::Open(store_, "levels/ds", options).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("drop the level or set the compression"), std::string::npos) << refused.message();
  options.compression = Compression::kGzip;
  SPOOL_ASSERT_OK(ShardedWriter::Open(store_, "levels/ok", options).status());

  RecordWriterOptions file;
  file.compression_level = 1;
  EXPECT_EQ(RecordWriter::Open(store_, "levels/plain.tfrecord", file).status().code(), StatusCode::kInvalidArgument);
  SPOOL_ASSERT_OK(RecordWriter::Open(store_, "levels/zipped.tfrecord.gz", file).status());
  ListOptions list;
  list.prefix = "levels/";
  EXPECT_TRUE(ListAll(store_, list).value().objects.empty());
}

TEST_F(ShardedWriterTest, AbortLeavesNoShardAndNoManifest) {
  ShardedWriterOptions options;
  options.max_shard_records = 2;
  {
    auto writer = ShardedWriter::Open(store_, "gone/ds", options).value();
    for (int i = 0; i < 7; ++i) SPOOL_ASSERT_OK(writer->Write("r"));
    writer->Abort();
    EXPECT_EQ(writer->Write("late").code(), StatusCode::kFailedPrecondition);
  }
  {
    auto writer = ShardedWriter::Open(store_, "gone/ds", options).value();
    for (int i = 0; i < 7; ++i) SPOOL_ASSERT_OK(writer->Write("r"));
  }  // destroyed without Close
  ListOptions list;
  list.prefix = "gone/";
  EXPECT_TRUE(ListAll(store_, list).value().objects.empty());
}

TEST(ManifestTest, ParsingChecksVersionNamesAndTotals) {
  auto ok = ParseManifest(R"({"format_version": 1, "compression": "NONE", "total_records": "3", "total_bytes": "10",
                              "shards": [{"name": "a-00000.tfrecord", "records": "3", "bytes": "10"}],
                              "future_field": true})",
                          "m.json");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ShardKeys("x/y/m.manifest.json", *ok), std::vector<std::string>{"x/y/a-00000.tfrecord"});
  EXPECT_EQ(ParseManifest(R"({"format_version": 2})", "m.json").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ParseManifest(R"({})", "m.json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseManifest(R"({"format_version": 1, "compression": "LZ4"})", "m.json").status().code(),
            StatusCode::kInvalidArgument);
  auto escape = ParseManifest(R"({"format_version": 1, "shards": [{"name": "../etc/passwd"}]})", "m.json");
  EXPECT_EQ(escape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(escape.status().message().find("outside its folder"), std::string::npos);
  auto totals = ParseManifest(R"({"format_version": 1, "total_records": "5", "shards": [{"name": "a", "records": "3"}]})",
                              "m.json");
  EXPECT_NE(totals.status().message().find("inconsistent"), std::string::npos);
}

}  // namespace
}  // namespace spool::records
