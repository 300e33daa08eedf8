// RecordReader and RecordWriter on the memory and local stores: framing,
// TensorFlow's outcomes, positions, policies, I/O shape.
#include "spool/records/record_reader.h"

#include <zlib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "spool/core/crc32c.h"
#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "spool/records/record_writer.h"
#include "tests/records/test_util.h"

namespace spool::records {
namespace {

using testing::Frame;

std::vector<std::string> ReadAllRecords(RecordReader& reader, Status* end_status = nullptr) {
  std::vector<std::string> out;
  std::string record;
  while (true) {
    auto more = reader.Next(&record);
    if (!more.ok()) {
      if (end_status) *end_status = more.status();
      break;
    }
    if (!*more) break;
    out.push_back(record);
  }
  return out;
}

class RecordReaderTest : public ::testing::Test {
 protected:
  RecordReaderTest() : store_("records-reader-test") { MemoryStore::ClearBucket("records-reader-test"); }

  std::unique_ptr<RecordReader> OpenOrDie(std::string_view key, RecordReaderOptions options = {}) {
    auto reader = RecordReader::Open(store_, key, options);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    return std::move(reader).value();
  }

  MemoryStore store_;
};

TEST_F(RecordReaderTest, WriterOutputMatchesIndependentFraming) {
  std::vector<std::string> records = {"foo", "", std::string(70000, 'x'), "bar"};
  auto writer = RecordWriter::Open(store_, "a.tfrecord");
  ASSERT_TRUE(writer.ok());
  for (const auto& r : records) SPOOL_ASSERT_OK((*writer)->Write(r));
  auto file = (*writer)->Close();
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->records, 4u);
  const std::string expected = Frame(records);
  EXPECT_EQ(file->bytes, expected.size());
  EXPECT_EQ(file->crc32c, crc32c::Value(expected));
  EXPECT_EQ(ReadAll(store_, "a.tfrecord").value(), expected);

  auto reader = OpenOrDie("a.tfrecord");
  EXPECT_EQ(ReadAllRecords(*reader), records);
  EXPECT_EQ(reader->stats().records, 4u);
  EXPECT_EQ(reader->stats().object_bytes, expected.size());
}

TEST_F(RecordReaderTest, PartialHeaderEndsCleanlyAndShortRecordIsTruncated) {
  const std::string two = Frame({"foo", "hello"});  // second record at 19, 21 bytes
  for (size_t cut = 19; cut < two.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    ASSERT_TRUE(WriteAll(store_, "cut.tfrecord", two.substr(0, cut)).ok());
    auto reader = OpenOrDie("cut.tfrecord");
    Status status;
    auto records = ReadAllRecords(*reader, &status);
    EXPECT_EQ(records, std::vector<std::string>{"foo"});
    if (cut - 19 < 12) {
      EXPECT_TRUE(status.ok()) << status.ToString();  // TensorFlow: OutOfRange, the end
    } else {
      EXPECT_EQ(status.code(), StatusCode::kDataLoss);
      EXPECT_NE(status.message().find("truncated record at 19 in mem://records-reader-test/cut.tfrecord"),
                std::string::npos)
          << status.message();
    }
  }
}

TEST_F(RecordReaderTest, CorruptionNamesTensorFlowsOffsetsAndTheUrl) {
  std::string data = Frame({"foo", "bar"});
  std::string bad_length = data;
  bad_length[19 + 9] ^= 1;  // the second record's length CRC
  std::string bad_payload = data;
  bad_payload[19 + 12] ^= 1;  // the second record's payload
  std::string not_tfrecord = "this is not a tfrecord file";

  struct Case {
    std::string content;
    std::string message;
  };
  for (const Case& c : {Case{bad_length, "corrupted record at 19 in mem://records-reader-test/x.tfrecord"},
                        Case{bad_payload, "corrupted record at 31 in mem://records-reader-test/x.tfrecord"},
                        Case{not_tfrecord, "corrupted record at 0 (Is this even a TFRecord file?) in mem://"}}) {
    ASSERT_TRUE(WriteAll(store_, "x.tfrecord", c.content).ok());
    auto reader = OpenOrDie("x.tfrecord");
    Status status;
    ReadAllRecords(*reader, &status);
    EXPECT_EQ(status.code(), StatusCode::kDataLoss);
    EXPECT_NE(status.message().find(c.message), std::string::npos) << status.message();
  }
}

TEST_F(RecordReaderTest, SkipPolicyEndsTheShardAndCountsIt) {
  std::string data = Frame({"a", "b", "c"});
  data[20 + 12] ^= 0x40;  // payload of "b" (records are 17 bytes)
  ASSERT_TRUE(WriteAll(store_, "skip.tfrecord", data).ok());
  RecordReaderOptions options;
  options.on_corrupt = CorruptPolicy::kSkipRestOfShard;
  auto reader = OpenOrDie("skip.tfrecord", options);
  Status status;
  EXPECT_EQ(ReadAllRecords(*reader, &status), std::vector<std::string>{"a"});
  EXPECT_TRUE(status.ok());
  EXPECT_TRUE(reader->stats().skipped_rest);
  EXPECT_NE(reader->stats().skip_reason.message().find("corrupted record at 29"), std::string::npos)
      << reader->stats().skip_reason.message();
  EXPECT_EQ(reader->next_offset(), 17u);  // where the damage starts
}

TEST_F(RecordReaderTest, RecordsAcrossChunkBoundariesWithAndWithoutReadAhead) {
  std::mt19937_64 rng(7);
  std::vector<std::string> records;
  for (int i = 0; i < 300; ++i) records.push_back(testing::RandomBytes(rng, rng() % 20000));
  ASSERT_TRUE(WriteAll(store_, "span.tfrecord", Frame(records)).ok());
  for (uint64_t read_ahead : {uint64_t{0}, uint64_t{4096}, uint64_t{64 << 10}}) {
    SCOPED_TRACE("read_ahead " + std::to_string(read_ahead));
    RecordReaderOptions options;
    options.io.chunk_size = 4096;
    options.io.read_ahead = read_ahead;
    auto reader = OpenOrDie("span.tfrecord", options);
    EXPECT_EQ(ReadAllRecords(*reader), records);
  }
}

// The manifest's CRC32C of the whole object, which the reader builds from
// the records' own (crc32c::Combine for records of 16 KiB and more): records
// on both sides of that size, across 4 KiB chunk boundaries, with and
// without read-ahead and with trailing bytes (a partial header), match; one
// flipped expectation is DataLoss naming the URL instead of the last record.
TEST_F(RecordReaderTest, WholeObjectCrcFromTheRecordsAcrossChunkBoundaries) {
  std::mt19937_64 rng(11);
  std::vector<std::string> records;
  for (int i = 0; i < 60; ++i) records.push_back(testing::RandomBytes(rng, rng() % 40000));
  for (const std::string& tail : {std::string(), std::string("12345")}) {
    const std::string bytes = Frame(records) + tail;
    ASSERT_TRUE(WriteAll(store_, "whole.tfrecord", bytes).ok());
    for (uint64_t read_ahead : {uint64_t{0}, uint64_t{64 << 10}}) {
      SCOPED_TRACE("read_ahead " + std::to_string(read_ahead) + ", tail " + std::to_string(tail.size()));
      RecordReaderOptions options;
      options.io.chunk_size = 4096;
      options.io.read_ahead = read_ahead;
      options.io.expected_crc32c = crc32c::Value(bytes.data(), bytes.size());
      Status end;
      EXPECT_EQ(ReadAllRecords(*OpenOrDie("whole.tfrecord", options), &end), records);
      EXPECT_TRUE(end.ok()) << end.ToString();
      options.io.expected_crc32c = *options.io.expected_crc32c ^ 1;
      const std::vector<std::string> before_error = ReadAllRecords(*OpenOrDie("whole.tfrecord", options), &end);
      EXPECT_EQ(end.code(), StatusCode::kDataLoss) << end.ToString();
      EXPECT_NE(end.message().find("CRC32C of the whole object"), std::string::npos) << end.ToString();
      EXPECT_NE(end.message().find(store_.Describe("whole.tfrecord")), std::string::npos) << end.ToString();
      // Without a tail the last record is withheld; with one, the tail ends the check.
      EXPECT_EQ(before_error.size(), tail.empty() ? records.size() - 1 : records.size());
    }
  }
}

// Counts ReadAt calls, and can fail once at a chosen offset.
class CountingObject : public ReadableObject {
 public:
  explicit CountingObject(std::unique_ptr<ReadableObject> inner) : inner_(std::move(inner)) {}
  const ObjectInfo& info() const override { return inner_->info(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
    ++calls;
    if (fail_at.load() == offset) {
      fail_at = UINT64_MAX;
      return UnavailableError("injected failure");
    }
    return inner_->ReadAt(offset, buffer);
  }
  std::atomic<int> calls{0};
  std::atomic<uint64_t> fail_at{UINT64_MAX};

 private:
  std::unique_ptr<ReadableObject> inner_;
};

TEST_F(RecordReaderTest, ReadsInLargeChunksNotPerRecord) {
  std::vector<std::string> records(10000, std::string(100, 'r'));  // 1.16 MB
  ASSERT_TRUE(WriteAll(store_, "many.tfrecord", Frame(records)).ok());
  auto counting = std::make_shared<CountingObject>(store_.OpenRead("many.tfrecord").value());
  RecordReaderOptions options;
  options.io.chunk_size = 256 << 10;
  auto reader = RecordReader::Open(counting, store_.Describe("many.tfrecord"), options).value();
  EXPECT_EQ(ReadAllRecords(*reader).size(), records.size());
  EXPECT_LE(counting->calls.load(), 6);  // ceil(1,160,000 / 262,144) == 5
}

TEST_F(RecordReaderTest, AReaderStartsSmallAndGrowsItsReadAhead) {
  std::vector<std::string> records(10000, std::string(100, 's'));  // 1.16 MB
  ASSERT_TRUE(WriteAll(store_, "ramp.tfrecord", Frame(records)).ok());
  auto counting = std::make_shared<CountingObject>(store_.OpenRead("ramp.tfrecord").value());
  RecordReaderOptions options;
  options.io.chunk_size = 64 << 10;
  options.io.first_chunk = 16 << 10;
  options.io.read_ahead = 512 << 10;  // 8 chunks ahead once grown
  auto reader = RecordReader::Open(counting, store_.Describe("ramp.tfrecord"), options).value();
  std::string_view record;
  ASSERT_TRUE(reader->Next(&record).value());
  // The first record came from one request of first_chunk bytes; since then
  // at most 2 more went out (the read-ahead doubles from 1), not all 8.
  EXPECT_LE(counting->calls.load(), 3);
  EXPECT_EQ(reader->stats().object_bytes, 16u << 10);
  EXPECT_EQ(ReadAllRecords(*reader).size(), records.size() - 1);
  // 16 KiB, then 64 KiB chunks: 1 + ceil((1,160,000 - 16,384) / 65,536) == 19.
  EXPECT_EQ(counting->calls.load(), 19);

  // An object of one chunk or less is still read with one request (and so
  // checked whole by its store).
  std::vector<std::string> few(400, std::string(100, 'f'));  // 46 KB
  ASSERT_TRUE(WriteAll(store_, "small.tfrecord", Frame(few)).ok());
  auto small = std::make_shared<CountingObject>(store_.OpenRead("small.tfrecord").value());
  auto small_reader = RecordReader::Open(small, store_.Describe("small.tfrecord"), options).value();
  EXPECT_EQ(ReadAllRecords(*small_reader).size(), few.size());
  EXPECT_EQ(small->calls.load(), 1);
}

// A local object (reads_are_local) whose reads note the thread they ran on.
class ThreadNotingLocalObject : public ReadableObject {
 public:
  explicit ThreadNotingLocalObject(std::unique_ptr<ReadableObject> inner) : inner_(std::move(inner)) {}
  const ObjectInfo& info() const override { return inner_->info(); }
  bool reads_are_local() const override { return true; }
  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
    std::lock_guard lock(mu);
    threads.insert(std::this_thread::get_id());
    bytes_asked += buffer.size();
    return inner_->ReadAt(offset, buffer);
  }
  std::mutex mu;
  std::set<std::thread::id> threads;
  uint64_t bytes_asked = 0;

 private:
  std::unique_ptr<ReadableObject> inner_;
};

TEST_F(RecordReaderTest, LocalBlocksAreReadOnTheConsumersThreadWithoutReadAhead) {
  // Read ahead by executor threads, a block's bytes are cold in another
  // core's cache when its records are parsed and checked (chunk_reader.h):
  // local blocks are read by the thread that reads the records, one at a
  // time, even with a read-ahead asked for.
  std::vector<std::string> records(2000, std::string(1000, 'l'));  // 2 MB: 32 blocks of 64 KiB
  ASSERT_TRUE(WriteAll(store_, "consumer.tfrecord", Frame(records)).ok());
  auto object = std::make_shared<ThreadNotingLocalObject>(store_.OpenRead("consumer.tfrecord").value());
  RecordPool pool(64 << 10, 1 << 20);
  RecordReaderOptions options;
  options.io.blocks = &pool;
  options.io.read_ahead = 1 << 20;
  auto reader = RecordReader::Open(object, store_.Describe("consumer.tfrecord"), options).value();
  ASSERT_TRUE(reader->reads_into_blocks());
  std::string_view record;
  ASSERT_TRUE(reader->Next(&record).value());
  {
    // One block (the first request's) read so far, nothing ahead of it.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // time for any read-ahead to run
    std::lock_guard lock(object->mu);
    EXPECT_EQ(object->bytes_asked, 64u << 10);
  }
  size_t seen = 1;
  while (reader->Next(&record).value()) ++seen;
  EXPECT_EQ(seen, records.size());
  std::lock_guard lock(object->mu);
  EXPECT_EQ(object->threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_F(RecordReaderTest, LocalReadsHandOutRecordsAsViewsOfPooledBlocks) {
  // Records of 1-30 KB, each different, in a local object read in 64 KiB
  // blocks: most lie within one block and come as views of it, which stay
  // valid as long as the block is held (here: all of them to the end); the
  // few that straddle two blocks come as a copy.
  std::vector<std::string> records;
  for (int i = 0; i < 300; ++i) {
    std::string record(1000 + (i * 7919) % 29000, ' ');
    for (size_t j = 0; j < record.size(); ++j) record[j] = static_cast<char>('a' + (i + j / 97) % 26);
    records.push_back(std::move(record));
  }
  ASSERT_TRUE(WriteAll(store_, "views.tfrecord", Frame(records)).ok());
  RecordPool pool(64 << 10, 1 << 20);
  RecordReaderOptions options;
  options.io.blocks = &pool;
  options.io.read_ahead = 256 << 10;
  std::vector<std::pair<BlockRef, std::string_view>> views;
  std::vector<std::string> seen;
  {
    auto reader = OpenOrDie("views.tfrecord", options);
    ASSERT_TRUE(reader->reads_into_blocks());
    std::string_view record;
    BlockRef block;
    size_t copies = 0;
    while (reader->Next(&record, &block).value()) {
      if (block) {
        const char* start = RecordPool::data(block);
        EXPECT_TRUE(record.data() >= start && record.data() + record.size() <= start + RecordPool::capacity(block));
        views.emplace_back(block, record);
        seen.emplace_back();  // filled from the view at the end
      } else {
        ++copies;
        seen.emplace_back(record);
      }
    }
    EXPECT_GT(views.size(), records.size() * 3 / 4);
    EXPECT_GT(copies, 0u);
    EXPECT_EQ(views.size() + copies, records.size());
  }
  // The reader is gone; the views read what was read then.
  size_t next_view = 0;
  for (std::string& record : seen) {
    if (record.empty()) record = std::string(views[next_view++].second);
  }
  EXPECT_EQ(seen, records);
  EXPECT_GT(pool.stats().blocks_live, 0u);
  views.clear();
  EXPECT_EQ(pool.stats().blocks_live, 0u);

  // Given a writer to spill into, the records that straddle blocks are
  // gathered into its blocks instead: every record comes with a block.
  {
    BlockWriter spill(&pool);
    auto reader = OpenOrDie("views.tfrecord", options);
    std::string_view record;
    BlockRef block;
    while (reader->Next(&record, &block, &spill).value()) {
      ASSERT_TRUE(block);
      views.emplace_back(block, record);
    }
  }
  ASSERT_EQ(views.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(views[i].second, records[i]) << "record " << i;
  views.clear();
  EXPECT_EQ(pool.stats().blocks_live, 0u);

  // A remote object (any that does not say its reads are local) is read in
  // chunks of its own, and its records come without a block.
  auto counting = std::make_shared<CountingObject>(store_.OpenRead("views.tfrecord").value());
  auto remote = RecordReader::Open(counting, store_.Describe("views.tfrecord"), options).value();
  EXPECT_FALSE(remote->reads_into_blocks());
  const uint64_t made = pool.stats().blocks_made;
  std::string_view record;
  BlockRef block;
  size_t read = 0;
  while (remote->Next(&record, &block).value()) {
    EXPECT_FALSE(block);
    EXPECT_EQ(record, records[read++]);
  }
  EXPECT_EQ(read, records.size());
  EXPECT_EQ(pool.stats().blocks_made, made);
}

TEST_F(RecordReaderTest, RetriesTheRecordAfterAnIoError) {
  std::vector<std::string> records = {"one", std::string(10000, '2'), "three"};
  ASSERT_TRUE(WriteAll(store_, "io.tfrecord", Frame(records)).ok());
  auto counting = std::make_shared<CountingObject>(store_.OpenRead("io.tfrecord").value());
  counting->fail_at = 4096;  // the second chunk
  RecordReaderOptions options;
  options.io.chunk_size = 4096;
  options.io.read_ahead = 0;
  auto reader = RecordReader::Open(counting, "mem://records-reader-test/io.tfrecord", options).value();
  std::string record;
  ASSERT_TRUE(reader->Next(&record).value());
  EXPECT_EQ(record, "one");
  auto failed = reader->Next(&record);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("io.tfrecord at byte 4096"), std::string::npos)
      << failed.status().message();
  EXPECT_EQ(reader->next_offset(), 19u);
  ASSERT_TRUE(reader->Next(&record).value());  // retried from the record's start
  EXPECT_EQ(record, records[1]);
  ASSERT_TRUE(reader->Next(&record).value());
  EXPECT_EQ(record, "three");
}

TEST_F(RecordReaderTest, ReadAheadStaysWithinTheByteBudget) {
  std::vector<std::string> records(2000, std::string(1000, 'b'));
  ASSERT_TRUE(WriteAll(store_, "budget.tfrecord", Frame(records)).ok());
  ByteBudget budget(64 << 10);
  RecordReaderOptions options;
  options.io.chunk_size = 16 << 10;
  options.io.read_ahead = 1 << 20;  // wants far more than the budget has
  options.io.budget = &budget;
  auto reader = OpenOrDie("budget.tfrecord", options);
  EXPECT_EQ(ReadAllRecords(*reader).size(), records.size());
  EXPECT_LE(budget.peak(), budget.capacity());
  EXPECT_GT(budget.peak(), 0u);
  EXPECT_EQ(budget.in_use(), 0u);
  reader.reset();
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST_F(RecordReaderTest, ReadersOfOneChunkSizeReuseEachOthersBuffers) {
  std::vector<std::string> records(200, std::string(1000, 'p'));
  ASSERT_TRUE(WriteAll(store_, "pool.tfrecord", Frame(records)).ok());
  BufferPool pool(1 << 20);
  RecordReaderOptions options;
  options.io.chunk_size = 16 << 10;
  options.io.read_ahead = 64 << 10;
  options.io.buffers = &pool;
  auto first = OpenOrDie("pool.tfrecord", options);
  EXPECT_EQ(ReadAllRecords(*first).size(), records.size());
  EXPECT_EQ(pool.idle_bytes(), 0u);  // all still the reader's
  first.reset();
  const uint64_t idle = pool.idle_bytes();
  EXPECT_GE(idle, 16u << 10);  // given back, not freed
  auto second = OpenOrDie("pool.tfrecord", options);
  std::string_view record;
  ASSERT_TRUE(second->Next(&record).value());
  EXPECT_LT(pool.idle_bytes(), idle);  // taken from the pool
  EXPECT_EQ(ReadAllRecords(*second).size(), records.size() - 1);
}

TEST_F(RecordReaderTest, ResumesFromReportedOffsets) {
  std::vector<std::string> records;
  for (int i = 0; i < 50; ++i) records.push_back("record-" + std::to_string(i) + std::string(i * 37, 'z'));
  for (Compression compression : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    SCOPED_TRACE(std::string(CompressionName(compression)));
    const std::string key = "resume.tfrecord" + std::string(CompressionExtension(compression));
    {
      auto writer = RecordWriter::Open(store_, key).value();
      for (const auto& r : records) SPOOL_ASSERT_OK(writer->Write(r));
      ASSERT_TRUE(writer->Close().ok());
    }
    std::vector<uint64_t> offsets;  // offset of each record, and the resume points
    {
      auto reader = OpenOrDie(key);
      std::string_view view;
      while (reader->Next(&view).value()) offsets.push_back(reader->record_offset());
      EXPECT_EQ(reader->compression(), compression);
    }
    ASSERT_EQ(offsets.size(), records.size());
    for (size_t start : {size_t{0}, size_t{1}, size_t{17}, size_t{49}}) {
      auto reader = OpenOrDie(key);
      SPOOL_ASSERT_OK(reader->SeekToOffset(offsets[start]));
      std::string record;
      ASSERT_TRUE(reader->Next(&record).value());
      EXPECT_EQ(record, records[start]);
      EXPECT_EQ(reader->record_offset(), offsets[start]);
      // And backwards, by record number (skipping, as there is no index).
      SPOOL_ASSERT_OK(reader->SeekToRecord(start / 2));
      ASSERT_TRUE(reader->Next(&record).value());
      EXPECT_EQ(record, records[start / 2]);
      EXPECT_EQ(reader->next_record_index(), start / 2 + 1);
    }
    auto reader = OpenOrDie(key);
    EXPECT_EQ(reader->SeekToRecord(50).code(), StatusCode::kOk);
    std::string none;
    EXPECT_FALSE(reader->Next(&none).value());
    EXPECT_EQ(reader->SeekToRecord(51).code(), StatusCode::kOutOfRange);
  }
}

TEST_F(RecordReaderTest, SeeksToRecordsThroughTheIndexFile) {
  std::vector<std::string> records;
  for (int i = 0; i < 100; ++i) records.push_back(std::string(i * 11, static_cast<char>('a' + i % 26)));
  RecordWriterOptions writer_options;
  writer_options.write_index = true;
  auto writer = RecordWriter::Open(store_, "indexed.tfrecord", writer_options).value();
  for (const auto& r : records) SPOOL_ASSERT_OK(writer->Write(r));
  auto file = writer->Close().value();
  EXPECT_EQ(file.index_key, "indexed.tfrecord.idx");
  auto index = RecordIndex::Load(store_, file.index_key, file.bytes);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index->size(), 100u);
  EXPECT_EQ(RecordIndex::Build(store_, "indexed.tfrecord").value(), *index);

  // The seek jumps: only the tail is read.
  RecordReaderOptions options;
  options.io.chunk_size = 4096;
  auto reader = OpenOrDie("indexed.tfrecord", options);
  SPOOL_ASSERT_OK(reader->SeekToRecord(90));
  EXPECT_EQ(reader->next_offset(), index->entries()[90].offset);
  std::string record;
  for (int i = 90; i < 100; ++i) {
    ASSERT_TRUE(reader->Next(&record).value());
    EXPECT_EQ(record, records[i]);
  }
  EXPECT_LT(reader->stats().object_bytes, file.bytes / 4);
  EXPECT_EQ(reader->next_record_index(), 100u);

  // A record range [20, 30) via end_offset.
  options.end_offset = index->entries()[30].offset;
  auto ranged = OpenOrDie("indexed.tfrecord", options);
  SPOOL_ASSERT_OK(ranged->SeekToRecord(20));
  auto got = ReadAllRecords(*ranged);
  EXPECT_EQ(got, std::vector<std::string>(records.begin() + 20, records.begin() + 30));
}

TEST_F(RecordReaderTest, ABadIndexFileIsAClearError) {
  ASSERT_TRUE(WriteAll(store_, "bad.tfrecord", Frame({"a", "b"})).ok());
  ASSERT_TRUE(WriteAll(store_, "bad.tfrecord.idx", "0 17\n17 99\n").ok());
  auto reader = OpenOrDie("bad.tfrecord");
  Status status = reader->SeekToRecord(1);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("mem://records-reader-test/bad.tfrecord.idx line 2"), std::string::npos)
      << status.message();
}

TEST_F(RecordReaderTest, CompressionComesFromTheExtensionOrTheOptions) {
  auto writer = RecordWriter::Open(store_, "c.tfrecord.gz").value();
  SPOOL_ASSERT_OK(writer->Write("zipped"));
  ASSERT_TRUE(writer->Close().ok());
  const std::string gz = ReadAll(store_, "c.tfrecord.gz").value();
  EXPECT_EQ(gz.substr(0, 2), "\x1f\x8b");
  // The same bytes under a name without .gz are read as they are named.
  ASSERT_TRUE(WriteAll(store_, "c.tfrecord", gz).ok());
  auto plain = OpenOrDie("c.tfrecord");
  Status status;
  ReadAllRecords(*plain, &status);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  RecordReaderOptions options;
  options.compression = Compression::kGzip;
  auto explicit_gzip = OpenOrDie("c.tfrecord", options);
  EXPECT_EQ(ReadAllRecords(*explicit_gzip), std::vector<std::string>{"zipped"});
}

TEST_F(RecordReaderTest, DamagedCompressedStreamsAreDataLoss) {
  auto writer = RecordWriter::Open(store_, "d.tfrecord.gz").value();
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20; ++i) SPOOL_ASSERT_OK(writer->Write(testing::RandomBytes(rng, 3000)));
  ASSERT_TRUE(writer->Close().ok());
  const std::string gz = ReadAll(store_, "d.tfrecord.gz").value();

  ASSERT_TRUE(WriteAll(store_, "cut.tfrecord.gz", gz.substr(0, gz.size() / 2)).ok());
  Status status;
  auto cut = ReadAllRecords(*OpenOrDie("cut.tfrecord.gz"), &status);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_LT(cut.size(), 20u);

  ASSERT_TRUE(WriteAll(store_, "garbage.tfrecord.gz", gz + "garbage!").ok());
  status = OkStatus();
  auto garbage = ReadAllRecords(*OpenOrDie("garbage.tfrecord.gz"), &status);
  EXPECT_EQ(garbage.size(), 20u);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("mem://records-reader-test/garbage.tfrecord.gz"), std::string::npos);

  RecordReaderOptions skip;
  skip.on_corrupt = CorruptPolicy::kSkipRestOfShard;
  auto skipping = OpenOrDie("garbage.tfrecord.gz", skip);
  status = OkStatus();
  EXPECT_EQ(ReadAllRecords(*skipping, &status).size(), 20u);
  EXPECT_TRUE(status.ok());
  EXPECT_TRUE(skipping->stats().skipped_rest);
}

TEST_F(RecordReaderTest, ConcatenatedGzipMembersReadAsOneStreamWithBothEngines) {
  std::mt19937_64 rng(21);
  std::vector<std::string> first;
  std::vector<std::string> second;
  for (int i = 0; i < 30; ++i) first.push_back(testing::RandomBytes(rng, rng() % 5000));
  for (int i = 0; i < 30; ++i) second.push_back(std::string(rng() % 5000, 'z'));
  std::string joined;
  for (const auto* part : {&first, &second}) {
    auto writer = RecordWriter::Open(store_, "part.tfrecord.gz").value();
    for (const auto& r : *part) SPOOL_ASSERT_OK(writer->Write(r));
    ASSERT_TRUE(writer->Close().ok());
    joined += ReadAll(store_, "part.tfrecord.gz").value();
  }
  ASSERT_TRUE(WriteAll(store_, "joined.tfrecord.gz", joined).ok());
  std::vector<std::string> all = first;
  all.insert(all.end(), second.begin(), second.end());
  std::vector<Inflater::Engine> engines = {Inflater::Engine::kZlib};
  if (Inflater::HasIsal()) engines.push_back(Inflater::Engine::kIsal);
  for (Inflater::Engine engine : engines) {
    RecordReaderOptions options;
    options.inflate_engine = engine;
    options.io.chunk_size = 4096;  // the member boundary falls inside a chunk
    options.inflate_block_size = 4096;
    auto reader = OpenOrDie("joined.tfrecord.gz", options);
    EXPECT_EQ(ReadAllRecords(*reader), all);
  }
  EXPECT_EQ(Inflater::Create(Compression::kGzip, Inflater::Engine::kIsal).ok(), Inflater::HasIsal());
}

// zlib's own inflate of a whole GZIP (window bits 31) or ZLIB (15) stream:
// what any other reader of the file sees.
std::string ZlibInflateAll(const std::string& compressed, int window_bits) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, window_bits), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    rc = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END) << "the stream does not end cleanly";
  EXPECT_EQ(stream.avail_in, 0u) << "bytes after the end of the stream";
  inflateEnd(&stream);
  return out;
}

TEST_F(RecordReaderTest, FastLevelFilesAreOrdinaryGzipAndZlibStreams) {
  std::mt19937_64 rng(33);
  std::vector<std::string> records;
  for (int i = 0; i < 200; ++i) {
    // Half compressible, half not, some larger than ISA-L's internal buffers.
    records.push_back(i % 2 ? std::string(rng() % 300000, static_cast<char>('a' + i % 26))
                            : testing::RandomBytes(rng, rng() % 20000));
  }
  auto write = [&](const std::string& key, int level) {
    RecordWriterOptions options;
    options.compression_level = level;
    options.append_size = 100000;  // many Deflate calls per stream
    auto writer = RecordWriter::Open(store_, key, options).value();
    for (const auto& r : records) SPOOL_ASSERT_OK(writer->Write(r));
    ASSERT_TRUE(writer->Close().ok());
  };
  write("plain.tfrecord", Deflater::kDefaultLevel);
  const std::string framed = ReadAll(store_, "plain.tfrecord").value();
  for (const auto& [key, window_bits] : {std::pair<std::string, int>{"fast.tfrecord.gz", 31}, {"fast.tfrecord.zlib", 15}}) {
    SCOPED_TRACE(key);
    write(key, Deflater::kFastLevel);
    const std::string compressed = ReadAll(store_, key).value();
    EXPECT_LT(compressed.size(), framed.size() * 3 / 4);
    EXPECT_TRUE(ZlibInflateAll(compressed, window_bits) == framed) << "zlib decodes other bytes";
    std::vector<Inflater::Engine> engines = {Inflater::Engine::kZlib};
    if (Inflater::HasIsal()) engines.push_back(Inflater::Engine::kIsal);
    for (Inflater::Engine engine : engines) {
      RecordReaderOptions options;
      options.inflate_engine = engine;
      auto reader = OpenOrDie(key, options);
      EXPECT_TRUE(ReadAllRecords(*reader) == records);
    }
  }
  auto fast = Deflater::Create(Compression::kGzip, Deflater::kFastLevel);
  ASSERT_TRUE(fast.ok());
  EXPECT_STREQ((*fast)->engine_name(), Inflater::HasIsal() ? "isal" : "zlib");
}

TEST(DeflaterTest, LevelsParseAndBadOnesAreRefused) {
  EXPECT_EQ(Deflater::ParseLevel("default").value(), Deflater::kDefaultLevel);
  EXPECT_EQ(Deflater::ParseLevel("fast").value(), Deflater::kFastLevel);
  EXPECT_EQ(Deflater::ParseLevel("9").value(), 9);
  for (std::string_view bad : {"", "10", "-1", "fastest"}) {
    auto level = Deflater::ParseLevel(bad);
    EXPECT_EQ(level.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(Deflater::Create(Compression::kGzip, 10).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Deflater::Create(Compression::kGzip, -3).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RecordReaderTest, AnAbortedOrAbandonedWriterLeavesNothing) {
  {
    auto writer = RecordWriter::Open(store_, "gone.tfrecord").value();
    SPOOL_ASSERT_OK(writer->Write("x"));
  }
  EXPECT_EQ(store_.Stat("gone.tfrecord").status().code(), StatusCode::kNotFound);
  auto writer = RecordWriter::Open(store_, "gone.tfrecord").value();
  SPOOL_ASSERT_OK(writer->Write("x"));
  writer->Abort();
  EXPECT_EQ(store_.Stat("gone.tfrecord").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(writer->Write("y").code(), StatusCode::kFailedPrecondition);
}

// Damage anywhere (flipped bytes, cuts) never crashes the reader, never
// yields a wrong record (the CRCs catch it), and ends in DataLoss or cleanly.
TEST_F(RecordReaderTest, DamagedFilesGiveAPrefixOfTheRecordsOrDataLoss) {
  std::mt19937_64 rng(99);
  std::vector<std::string> records;
  for (int i = 0; i < 40; ++i) records.push_back(testing::RandomBytes(rng, rng() % 3000));
  for (Compression compression : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    const std::string key = "fuzz.tfrecord" + std::string(CompressionExtension(compression));
    auto writer = RecordWriter::Open(store_, key).value();
    for (const auto& r : records) SPOOL_ASSERT_OK(writer->Write(r));
    ASSERT_TRUE(writer->Close().ok());
    const std::string good = ReadAll(store_, key).value();
    for (int trial = 0; trial < 300; ++trial) {
      std::string bad = good;
      if (trial % 3 == 0) {
        bad.resize(rng() % bad.size());
      } else {
        for (int flips = 1 + rng() % 3; flips > 0; --flips) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
      }
      ASSERT_TRUE(WriteAll(store_, key, bad).ok());
      RecordReaderOptions options;
      options.io.chunk_size = 4096;
      auto reader = OpenOrDie(key, options);
      Status status;
      auto got = ReadAllRecords(*reader, &status);
      ASSERT_LE(got.size(), records.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(got[i] == records[i]) << "record " << i;
      EXPECT_TRUE(status.ok() || status.code() == StatusCode::kDataLoss) << status.ToString();
    }
  }
}

TEST(RecordReaderLocalTest, RoundTripsOnLocalFiles) {
  testing::TempDir dir;
  LocalStore store;
  std::vector<std::string> records = {"local", "", std::string(1 << 20, 'L')};
  for (std::string name : {"l.tfrecord", "l.tfrecord.gz", "l.tfrecord.zlib"}) {
    auto writer = RecordWriter::Open(store, dir.Key(name)).value();
    for (const auto& r : records) SPOOL_ASSERT_OK(writer->Write(r));
    ASSERT_TRUE(writer->Close().ok());
    auto reader = RecordReader::Open(store, dir.Key(name)).value();
    EXPECT_EQ(ReadAllRecords(*reader), records) << name;
  }
  auto missing = RecordReader::Open(store, dir.Key("missing.tfrecord"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace spool::records
