// DALI index files: parsing (strict, robust to bad input), serializing,
// building for existing files.
#include "spool/records/record_index.h"

#include <random>

#include <gtest/gtest.h>

#include "spool/core/storage/memory_store.h"
#include "tests/records/test_util.h"

namespace spool::records {
namespace {

TEST(RecordIndexTest, ParsesAndSerializesDaliLines) {
  auto index = RecordIndex::Parse("0 27\n27 21\n48 23\n", "x.idx", 71);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->entries(), (std::vector<IndexEntry>{{0, 27}, {27, 21}, {48, 23}}));
  EXPECT_EQ(index->Serialize(), "0 27\n27 21\n48 23\n");
  EXPECT_EQ(index->end_offset(), 71u);
  EXPECT_EQ(index->RecordAt(27), 1u);
  EXPECT_EQ(index->RecordAt(28), std::nullopt);
  // Blanks, CRLF and a missing final newline are accepted.
  EXPECT_TRUE(RecordIndex::Parse("0\t27\r\n27  21", "x.idx").ok());
  EXPECT_EQ(RecordIndex::Parse("", "x.idx", 0).value().size(), 0u);
}

TEST(RecordIndexTest, RejectsBadInputWithTheLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"0 27\nabc\n", "x.idx line 2"},
      {"0\n", "x.idx line 1"},
      {"0 27 5\n", "unexpected text"},
      {"-1 27\n", "line 1"},
      {"0 15\n", "at least 16"},
      {"0 27\n28 21\n", "previous one ends at 27"},
      {"0 99999999999999999999\n", "line 1"},
      {"0 18446744073709551615\n", "line 1"},
      {"5 27\n", "starts at 5"},
      {"0 27\n\n", "line 2"},
      {"0 27\n27 21\n48 23\n71 16\n", "past the end"},
      {"0 27\n", "covers 27 bytes but the shard has 71"},
  };
  for (const Case& c : cases) {
    auto index = RecordIndex::Parse(c.text, "x.idx", 71);
    ASSERT_FALSE(index.ok()) << c.text;
    EXPECT_EQ(index.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(index.status().message().find(c.message), std::string::npos) << index.status().message();
  }
}

TEST(RecordIndexTest, RandomBytesNeverCrashTheParser) {
  std::mt19937_64 rng(11);
  const std::string alphabet = "0123456789 \t\r\n-+x";
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const size_t size = rng() % 40;
    for (size_t j = 0; j < size; ++j) text.push_back(alphabet[rng() % alphabet.size()]);
    auto index = RecordIndex::Parse(text, "fuzz.idx");
    if (!index.ok()) continue;
    ++accepted;
    // Whatever parses describes records that follow each other.
    uint64_t expected = 0;
    for (const IndexEntry& entry : index->entries()) {
      EXPECT_EQ(entry.offset, expected);
      EXPECT_GE(entry.size, 16u);
      expected += entry.size;
    }
  }
  EXPECT_GT(accepted, 0);  // the empty text at least
}

TEST(RecordIndexTest, BuildsTheIndexOfAnExistingFile) {
  MemoryStore store("records-index-test");
  ASSERT_TRUE(WriteAll(store, "f.tfrecord", testing::Frame({"", "foo", ""})).ok());
  auto index = RecordIndex::Build(store, "f.tfrecord");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->Serialize(), "0 16\n16 19\n35 16\n");
  EXPECT_EQ(RecordIndex::Build(store, "f.tfrecord.gz").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(IndexKeyFor("a/b.tfrecord"), "a/b.tfrecord.idx");
}

// A file cut inside a record's header (being written, or damaged) has bytes
// no index entry covers: building refuses it rather than write an index
// that Load would then refuse.
TEST(RecordIndexTest, BuildingAFileCutInsideAHeaderIsDataLoss) {
  MemoryStore store("records-index-test");
  ASSERT_TRUE(WriteAll(store, "cut.tfrecord", testing::Frame({"foo", "ba"}) + std::string("\x05\x00\x00", 3)).ok());
  auto index = RecordIndex::Build(store, "cut.tfrecord");
  EXPECT_EQ(index.status().code(), StatusCode::kDataLoss) << index.status().ToString();
  EXPECT_NE(index.status().message().find("cut.tfrecord is 40 bytes but its records end at byte 37: the shard is "
                                          "damaged or being written"),
            std::string::npos)
      << index.status().ToString();
}

}  // namespace
}  // namespace spool::records
