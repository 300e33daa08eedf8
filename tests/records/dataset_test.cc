// The dataset module: the glob grammar, the sidecar rule, expanding inputs,
// and the manifest builder shared by the sharded writer and the CLI.
#include "spool/records/dataset.h"

#include <gtest/gtest.h>

#include "spool/core/version.h"
#include "spool/core/storage/memory_store.h"
#include "spool/records/example.h"
#include "spool/records/manifest.h"
#include "tests/records/test_util.h"

namespace spool::records {
namespace {

TEST(DatasetGlob, SingleStarAndQuestionMarkStayWithinOneSegment) {
  EXPECT_TRUE(GlobMatch("ds/train-*", "ds/train-00001.tfrecord"));
  EXPECT_FALSE(GlobMatch("ds/train-*", "ds/train-a/00001.tfrecord"));  // fnmatch would match this
  EXPECT_TRUE(GlobMatch("ds/*/part-?", "ds/x/part-1"));
  EXPECT_FALSE(GlobMatch("ds/*/part-?", "ds/x/y/part-1"));
  EXPECT_FALSE(GlobMatch("ds/a?b", "ds/a/b"));
  EXPECT_TRUE(GlobMatch("*", "top-level"));
  EXPECT_FALSE(GlobMatch("*", "in/folder"));
  EXPECT_TRUE(GlobMatch("ds/*-of-*.tfrecord", "ds/t-00001-of-00002.tfrecord"));
  EXPECT_TRUE(GlobMatch("ds/train-*.tfrecord", "ds/train-.tfrecord"));  // '*' may match nothing
  EXPECT_FALSE(GlobMatch("ds/train-*.tfrecord", "ds/train-1.tfrecord.gz"));
  EXPECT_FALSE(GlobMatch("s-?.rec", "s-12.rec"));
}

TEST(DatasetGlob, DoubleStarCrossesSegments) {
  EXPECT_TRUE(GlobMatch("ds/**", "ds/a/b/c"));
  EXPECT_TRUE(GlobMatch("ds/**/*.tfrecord", "ds/a/b/c.tfrecord"));
  EXPECT_TRUE(GlobMatch("**.tfrecord", "a/b/c.tfrecord"));
  EXPECT_TRUE(GlobMatch("ds/**.gz", "ds/x.gz"));
  EXPECT_FALSE(GlobMatch("ds/**/*.tfrecord", "ds/a/b/c.tfrecord.gz"));
  EXPECT_FALSE(GlobMatch("ds/**", "other/a"));
  EXPECT_TRUE(GlobMatch("ds/*/**/x", "ds/a/b/c/x"));
  EXPECT_TRUE(GlobMatch("ds/**/c.tfrecord", "ds/a/b/c.tfrecord"));
}

TEST(DatasetGlob, ClassesNeverMatchASlash) {
  EXPECT_TRUE(GlobMatch("s-[0-3].rec", "s-2.rec"));
  EXPECT_FALSE(GlobMatch("s-[0-3].rec", "s-7.rec"));
  EXPECT_TRUE(GlobMatch("s-[!0-3].rec", "s-7.rec"));
  EXPECT_TRUE(GlobMatch("s-[^0-3].rec", "s-7.rec"));
  EXPECT_FALSE(GlobMatch("s-[!0-3].rec", "s-/.rec"));
  EXPECT_TRUE(GlobMatch("s-[ab-].rec", "s--.rec"));  // a trailing '-' is itself
  EXPECT_TRUE(GlobMatch("s-[].rec", "s-[].rec"));    // no closing ']': literal
  EXPECT_TRUE(HasWildcard("a/*"));
  EXPECT_TRUE(HasWildcard("a/[ab]"));
  EXPECT_FALSE(HasWildcard("a/b.tfrecord"));
}

TEST(DatasetSidecars, IndexFilesManifestsAndHiddenFilesAreNotShards) {
  EXPECT_TRUE(IsSidecarKey("ds/train-00000.tfrecord.idx"));
  EXPECT_TRUE(IsSidecarKey("ds/train.manifest.json"));
  EXPECT_TRUE(IsSidecarKey("ds/.index"));
  EXPECT_TRUE(IsSidecarKey(".hidden"));
  EXPECT_TRUE(IsSidecarKey("ds/.train-00000.tfrecord.spool-tmp-Ab12"));
  EXPECT_FALSE(IsSidecarKey("ds/train-00000.tfrecord"));
  EXPECT_FALSE(IsSidecarKey(".folder/train-00000.tfrecord"));  // only the base name counts
  EXPECT_TRUE(IsManifestKey("x.manifest.json"));
  EXPECT_FALSE(IsManifestKey("x.json"));
}

class ExpandInputTest : public ::testing::Test {
 protected:
  ExpandInputTest() : store_("records-dataset-test") {
    MemoryStore::ClearBucket("records-dataset-test");
    for (const char* key : {"ds/train-0.tfrecord", "ds/train-0.tfrecord.idx", "ds/train-1.tfrecord",
                            "ds/.train-2.tfrecord.spool-tmp-x", "ds/nested/train-3.tfrecord",
                            "ds/other.manifest.json"}) {
      EXPECT_TRUE(WriteAll(store_, key, "bytes").ok()) << key;
    }
  }
  std::vector<std::string> Keys(const ExpandedInput& input) {
    std::vector<std::string> keys;
    for (const DatasetShard& shard : input.shards) keys.push_back(shard.key);
    return keys;
  }
  MemoryStore store_;
};

TEST_F(ExpandInputTest, GlobKeepsMatchingShardsWithTheirIndexFiles) {
  SPOOL_ASSERT_OK_AND_ASSIGN(ExpandedInput input, ExpandInput(store_, "ds/train-*"));
  EXPECT_EQ(Keys(input), (std::vector<std::string>{"ds/train-0.tfrecord", "ds/train-1.tfrecord"}));
  EXPECT_EQ(input.shards[0].index_key, "ds/train-0.tfrecord.idx");
  EXPECT_EQ(input.shards[1].index_key, "");
  EXPECT_EQ(input.shards[0].size, 5u);
  EXPECT_FALSE(input.manifest);

  SPOOL_ASSERT_OK_AND_ASSIGN(ExpandedInput deep, ExpandInput(store_, "ds/**.tfrecord"));
  EXPECT_EQ(Keys(deep), (std::vector<std::string>{"ds/nested/train-3.tfrecord", "ds/train-0.tfrecord",
                                                  "ds/train-1.tfrecord"}));

  Result<ExpandedInput> none = ExpandInput(store_, "ds/valid-*");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("ds/valid-*"), std::string::npos) << none.status().ToString();
}

TEST_F(ExpandInputTest, PlainKeysAreShardsOrDatasets) {
  SPOOL_ASSERT_OK_AND_ASSIGN(ExpandedInput as_given, ExpandInput(store_, "ds/missing.tfrecord"));
  EXPECT_EQ(Keys(as_given), std::vector<std::string>{"ds/missing.tfrecord"});

  SPOOL_ASSERT_OK_AND_ASSIGN(ExpandedInput one, ExpandInput(store_, "ds/train-1.tfrecord", PlainKey::kShardOrDataset));
  EXPECT_EQ(Keys(one), std::vector<std::string>{"ds/train-1.tfrecord"});
  SPOOL_ASSERT_OK_AND_ASSIGN(ExpandedInput prefix, ExpandInput(store_, "ds/train", PlainKey::kShardOrDataset));
  EXPECT_EQ(Keys(prefix), (std::vector<std::string>{"ds/train-0.tfrecord", "ds/train-1.tfrecord"}));
  SPOOL_ASSERT_OK_AND_ASSIGN(ExpandedInput folder, ExpandInput(store_, "ds/", PlainKey::kShardOrDataset));
  EXPECT_EQ(Keys(folder), (std::vector<std::string>{"ds/nested/train-3.tfrecord", "ds/train-0.tfrecord",
                                                    "ds/train-1.tfrecord"}));
  EXPECT_EQ(ExpandInput(store_, "nothing/here", PlainKey::kShardOrDataset).status().code(), StatusCode::kNotFound);
}

TEST_F(ExpandInputTest, ManifestsListTheirShardsInOrder) {
  ManifestBuilder builder("ds/train.manifest.json", Compression::kNone);
  SPOOL_ASSERT_OK(builder.AddShard("ds/train-1.tfrecord", 2, 5, 7));
  SPOOL_ASSERT_OK(builder.AddShard("ds/train-0.tfrecord", 3, 5, 9, "ds/train-0.tfrecord.idx"));
  SPOOL_ASSERT_OK(WriteAll(store_, "ds/train.manifest.json", ManifestToJson(builder.Build()).value()).status());

  for (PlainKey plain : {PlainKey::kShard, PlainKey::kShardOrDataset}) {
    SPOOL_ASSERT_OK_AND_ASSIGN(ExpandedInput input, ExpandInput(store_, "ds/train.manifest.json", plain));
    EXPECT_EQ(Keys(input), (std::vector<std::string>{"ds/train-1.tfrecord", "ds/train-0.tfrecord"}));
    ASSERT_TRUE(input.manifest);
    EXPECT_EQ(input.manifest_key, "ds/train.manifest.json");
    EXPECT_EQ(input.shards[1].records, 3u);
    EXPECT_EQ(input.shards[1].index_key, "ds/train-0.tfrecord.idx");
  }
  // A dataset prefix with a manifest is the manifest.
  SPOOL_ASSERT_OK_AND_ASSIGN(ExpandedInput prefix, ExpandInput(store_, "ds/train", PlainKey::kShardOrDataset));
  EXPECT_TRUE(prefix.manifest);
}

tensorflow::Example MakeExample(int64_t label, bool text_as_float) {
  tensorflow::Example example;
  SetInt64s(example, "label", {label});
  if (text_as_float) {
    SetFloats(example, "text", {1.5f});
  } else {
    SetBytes(example, "text", {"hello"});
  }
  return example;
}

TEST(ManifestBuilder, CountsNamesAndCreator) {
  ManifestBuilder builder("data/sets/train.manifest.json", Compression::kGzip);
  SPOOL_ASSERT_OK(builder.AddShard("data/sets/train-0.tfrecord.gz", 10, 100, 1));
  SPOOL_ASSERT_OK(builder.AddShard("data/sets/sub/train-1.tfrecord.gz", 5, 50, 2));
  EXPECT_EQ(builder.AddShard("data/other/train-2.tfrecord.gz", 1, 1, 3).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(builder.AddShard("data/sets/train-3", 1, 1, 3, "elsewhere.idx").code(), StatusCode::kInvalidArgument);
  const DatasetManifest manifest = builder.Build();
  EXPECT_EQ(manifest.format_version(), kManifestFormatVersion);
  EXPECT_EQ(manifest.record_format(), "tfrecord");
  EXPECT_EQ(manifest.compression(), "GZIP");
  EXPECT_EQ(manifest.created_by(), std::string("spool ") + VersionString());
  ASSERT_EQ(manifest.shards_size(), 2);
  EXPECT_EQ(manifest.shards(1).name(), "sub/train-1.tfrecord.gz");
  EXPECT_EQ(manifest.total_records(), 15u);
  EXPECT_EQ(manifest.total_bytes(), 150u);
  EXPECT_FALSE(manifest.has_schema());
  // What it builds, ParseManifest accepts.
  SPOOL_ASSERT_OK(ParseManifest(ManifestToJson(manifest).value(), "test").status());
}

TEST(ManifestBuilder, InfersTheSchemaFromEveryExample) {
  ManifestBuilder builder("ds.manifest.json", Compression::kNone);
  builder.NoteExample(MakeExample(1, false));
  builder.NoteRecord(SerializeExample(MakeExample(2, true)));
  const DatasetManifest manifest = builder.Build();
  ASSERT_EQ(manifest.schema().features_size(), 2);
  EXPECT_EQ(manifest.schema().message_type(), "tensorflow.Example");
  EXPECT_EQ(manifest.schema().features(0).name(), "label");
  EXPECT_EQ(manifest.schema().features(0).kind(), "int64_list");
  EXPECT_EQ(manifest.schema().features(1).name(), "text");
  EXPECT_EQ(manifest.schema().features(1).kind(), "mixed");
}

TEST(ManifestBuilder, AGivenSchemaWinsAndNonExamplesMakeItUnknown) {
  ManifestBuilder given("ds.manifest.json", Compression::kNone);
  Schema schema;
  schema.set_message_type("tensorflow.Example");
  schema.add_features()->set_name("only");
  given.SetSchema(schema);
  given.NoteExample(MakeExample(1, false));
  ASSERT_EQ(given.Build().schema().features_size(), 1);
  EXPECT_EQ(given.Build().schema().features(0).name(), "only");

  ManifestBuilder unknown("ds.manifest.json", Compression::kNone);
  unknown.NoteExample(MakeExample(1, false));
  unknown.NoteRecord("\xff\xff not a protobuf");
  unknown.NoteExample(MakeExample(2, false));
  EXPECT_FALSE(unknown.Build().has_schema());
}

}  // namespace
}  // namespace spool::records
