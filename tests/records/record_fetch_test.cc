// FetchRecords: records by offset and size, a batch in a few ranged reads,
// every record checked.
#include "spool/records/record_fetch.h"

#include <atomic>
#include <memory>

#include <gtest/gtest.h>

#include "spool/core/storage/memory_store.h"
#include "spool/records/record_index.h"
#include "tests/records/test_util.h"

namespace spool::records {
namespace {

using testing::Frame;

// Counts the ReadAt calls that reach the object: one per request on a store.
class CountingObject : public ReadableObject {
 public:
  explicit CountingObject(std::unique_ptr<ReadableObject> inner) : inner_(std::move(inner)) {}
  const ObjectInfo& info() const override { return inner_->info(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
    ++reads;
    return inner_->ReadAt(offset, buffer);
  }
  std::atomic<int> reads{0};

 private:
  std::unique_ptr<ReadableObject> inner_;
};

std::vector<std::string> Records(int count, size_t size) {
  std::vector<std::string> records;
  for (int i = 0; i < count; ++i)
    records.push_back(std::string(size + static_cast<size_t>(i % 7), static_cast<char>('a' + i % 26)) +
                      std::to_string(i));
  return records;
}

class RecordFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryStore::ClearBucket("fetch");
    store_ = std::make_unique<MemoryStore>("fetch");
  }
  // Writes `records` as a shard and opens it; its index in `index`.
  std::unique_ptr<CountingObject> Shard(const std::string& key, const std::vector<std::string>& records,
                                        RecordIndex* index) {
    EXPECT_TRUE(WriteAll(*store_, key, Frame(records)).ok());
    *index = RecordIndex::Build(*store_, key).value();
    return std::make_unique<CountingObject>(store_->OpenRead(key).value());
  }
  std::unique_ptr<MemoryStore> store_;
};

TEST(PlanRangeReadsTest, MergesNeighboursWithinGapAndSpan) {
  // Records of 100 bytes back to back; asked out of order and one twice.
  std::vector<RecordRef> refs = {{0, 500, 100}, {0, 0, 100}, {0, 100, 100}, {0, 500, 100}, {1, 0, 100}};
  auto plan = PlanRangeReads(refs, 0, 1 << 20);
  ASSERT_EQ(plan.size(), 3u);  // [0, 200), [500, 600) twice, object 1
  EXPECT_EQ(plan[0].offset, 0u);
  EXPECT_EQ(plan[0].size, 200u);
  EXPECT_EQ(plan[0].refs, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(plan[1].offset, 500u);
  EXPECT_EQ(plan[1].size, 100u);
  EXPECT_EQ(plan[1].refs, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(plan[2].object, 1u);
  // A gap of 300 bytes is read when max_gap allows it.
  EXPECT_EQ(PlanRangeReads(refs, 300, 1 << 20).size(), 2u);
  // max_span cuts a run of neighbours.
  std::vector<RecordRef> run;
  for (uint64_t i = 0; i < 10; ++i) run.push_back({0, i * 100, 100});
  auto cut = PlanRangeReads(run, 0, 250);
  ASSERT_EQ(cut.size(), 5u);
  for (const RangeRead& range : cut) EXPECT_EQ(range.size, 200u);
}

TEST_F(RecordFetchTest, ReturnsEveryRecordInTheOrderAskedWithFewReads) {
  const std::vector<std::string> a_records = Records(300, 40);
  const std::vector<std::string> b_records = Records(50, 1000);
  RecordIndex a_index, b_index;
  auto a = Shard("a.tfrecord", a_records, &a_index);
  auto b = Shard("b.tfrecord", b_records, &b_index);
  std::vector<FetchSource> sources = {{a.get(), "mem://fetch/a.tfrecord"}, {b.get(), "mem://fetch/b.tfrecord"}};
  std::vector<RecordRef> refs;
  std::vector<std::string> expected;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 64; ++i) {
    const bool in_a = rng() % 4 != 0;
    const size_t record = in_a ? rng() % a_records.size() : rng() % b_records.size();
    const IndexEntry& entry = (in_a ? a_index : b_index).entries()[record];
    refs.push_back({in_a ? size_t{0} : size_t{1}, entry.offset, entry.size});
    expected.push_back((in_a ? a_records : b_records)[record]);
  }
  SPOOL_ASSERT_OK_AND_ASSIGN(std::vector<std::string> got, FetchRecords(sources, refs));
  EXPECT_EQ(got, expected);
  EXPECT_EQ(a->reads.load(), 1);  // each shard fits one range
  EXPECT_EQ(b->reads.load(), 1);

  // Without gaps allowed, one read per run of neighbours (at most one per record).
  a->reads = 0;
  FetchOptions strict;
  strict.max_gap = 0;
  SPOOL_ASSERT_OK_AND_ASSIGN(got, FetchRecords(sources, refs, strict));
  EXPECT_EQ(got, expected);
  EXPECT_GT(a->reads.load(), 1);
}

TEST_F(RecordFetchTest, ARecordLargerThanASpanIsReadInParts) {
  const std::vector<std::string> records = {std::string(10000, 'x'), "small"};
  RecordIndex index;
  auto shard = Shard("big.tfrecord", records, &index);
  std::vector<FetchSource> sources = {{shard.get(), "big"}};
  std::vector<RecordRef> refs = {{0, index.entries()[0].offset, index.entries()[0].size},
                                 {0, index.entries()[1].offset, index.entries()[1].size}};
  FetchOptions options;
  options.max_span = 4096;
  SPOOL_ASSERT_OK_AND_ASSIGN(std::vector<std::string> got, FetchRecords(sources, refs, options));
  EXPECT_EQ(got, records);
  EXPECT_EQ(shard->reads.load(), 3 + 1);  // 10016 bytes in 4096-byte parts, then the small one
}

TEST_F(RecordFetchTest, AStaleIndexOrDamageIsDataLossNamingTheShard) {
  const std::vector<std::string> records = Records(10, 20);
  RecordIndex index;
  auto shard = Shard("s.tfrecord", records, &index);
  std::vector<FetchSource> sources = {{shard.get(), "mem://fetch/s.tfrecord"}};
  const IndexEntry entry = index.entries()[3];
  struct Case {
    RecordRef ref;
    const char* message;
  };
  const Case cases[] = {
      {{0, entry.offset + 1, entry.size}, "length CRC mismatch"},
      {{0, entry.offset, entry.size + 1}, "the index says"},
      {{0, index.end_offset() - 10, 30}, "ends at byte"},
  };
  for (const Case& c : cases) {
    auto got = FetchRecords(sources, std::vector<RecordRef>{c.ref});
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(got.status().message().find("mem://fetch/s.tfrecord"), std::string::npos) << got.status().message();
    EXPECT_NE(got.status().message().find(c.message), std::string::npos) << got.status().message();
  }
  // A flipped payload byte.
  std::string bytes = Frame(records);
  bytes[entry.offset + 14] ^= 1;
  ASSERT_TRUE(WriteAll(*store_, "s2.tfrecord", bytes).ok());
  auto damaged = store_->OpenRead("s2.tfrecord").value();
  std::vector<FetchSource> damaged_sources = {{damaged.get(), "s2"}};
  auto got = FetchRecords(damaged_sources, std::vector<RecordRef>{{0, entry.offset, entry.size}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("payload CRC mismatch"), std::string::npos) << got.status().message();
  // Refs that name no open object, or a size below the framing, are refused.
  EXPECT_EQ(FetchRecords(sources, std::vector<RecordRef>{{1, 0, 20}}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FetchRecords(sources, std::vector<RecordRef>{{0, 0, 15}}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace spool::records
