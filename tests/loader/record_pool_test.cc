// The record pool under the loader's batches: records are views of pooled
// blocks that stay valid while referenced (beyond the loader) and whose
// blocks go back to the pool when the last reference drops.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "spool/core/storage/memory_store.h"
#include "spool/records/loader/data_loader.h"
#include "spool/records/loader/record_list.h"
#include "spool/records/record_pool.h"
#include "tests/loader/test_dataset.h"

namespace spool::testing {
namespace {

using loader::Batch;
using loader::BlockWriter;
using loader::DataLoader;
using loader::DataLoaderOptions;
using loader::PooledRecord;
using loader::RecordList;
using loader::RecordPool;

TEST(RecordPool, RecordsShareABlockThatReturnsWhenTheLastOneDrops) {
  RecordPool pool(4096, 1 << 20);
  BlockWriter writer(&pool);
  std::vector<PooledRecord> held;
  for (int i = 0; i < 10; ++i) held.push_back(writer.Copy(std::string(100, static_cast<char>('a' + i))));
  writer.Release();
  EXPECT_EQ(pool.stats().blocks_made, 1u);  // 1,000 bytes fit one block
  EXPECT_EQ(pool.stats().blocks_live, 1u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(held[i].bytes, std::string(100, static_cast<char>('a' + i)));
  held.resize(1);
  EXPECT_EQ(pool.stats().blocks_live, 1u);  // one record still pins it
  held.clear();
  EXPECT_EQ(pool.stats().blocks_live, 0u);
  EXPECT_EQ(pool.stats().bytes_live, 0u);
  EXPECT_EQ(pool.stats().blocks_idle, 1u);
  // Taken again, not made again.
  PooledRecord again = writer.Copy("xyz");
  EXPECT_EQ(pool.stats().blocks_made, 1u);
  EXPECT_EQ(pool.stats().blocks_idle, 0u);
}

TEST(RecordPool, LargeRecordsGetABlockOfTheirOwnThatIsReused) {
  RecordPool pool(4096, 1 << 20);
  BlockWriter writer(&pool);
  const std::string big(10000, 'b');
  {
    PooledRecord record = writer.Copy(big);
    EXPECT_EQ(record.bytes, big);
    EXPECT_EQ(pool.stats().bytes_live, 12288u);  // 10,000 bytes rounded up to pages
    writer.Release();
  }
  EXPECT_EQ(pool.stats().bytes_live, 0u);
  EXPECT_EQ(pool.stats().bytes_idle, 12288u);  // its own block, pages rounded, kept for the next large record
  PooledRecord again = writer.Copy(big);
  EXPECT_EQ(pool.stats().blocks_made, 1u);
}

TEST(RecordPool, IdleBlocksAreBounded) {
  RecordPool pool(4096, 2 * 4096);
  {
    std::vector<loader::BlockRef> blocks;
    for (int i = 0; i < 5; ++i) blocks.push_back(pool.Take(1));
    EXPECT_EQ(pool.stats().blocks_live, 5u);
  }
  EXPECT_EQ(pool.stats().blocks_idle, 2u);
}

TEST(RecordPool, ReferencesOutliveThePoolAndDropOnAnyThread) {
  std::vector<PooledRecord> held;
  {
    RecordPool pool(4096, 1 << 20);
    BlockWriter writer(&pool);
    for (int i = 0; i < 100; ++i) held.push_back(writer.Copy("record " + std::to_string(i)));
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ(held[i].bytes, "record " + std::to_string(i));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([mine = std::vector<PooledRecord>(held.begin() + 25 * t,
                                                           held.begin() + 25 * (t + 1))]() mutable { mine.clear(); });
  }
  held.clear();
  for (auto& thread : threads) thread.join();
}

TEST(RecordList, IteratesAsViewsAndCopiesOut) {
  RecordPool pool(4096, 1 << 20);
  BlockWriter writer(&pool);
  RecordList list;
  list.push_back(writer.Copy("one"));
  list.push_back(writer.Copy("two"));
  RecordList more;
  more.push_back(writer.Copy("three"));
  list.Append(std::move(more));
  std::vector<std::string> seen(list.begin(), list.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(list.CopyOut(), seen);
  EXPECT_EQ(list[2], "three");
  EXPECT_EQ(list.end() - list.begin(), 3);
}

TEST(DataLoaderRecords, ABatchOutlivesItsLoaderAndItsBlocksReturn) {
  MemoryStore::ClearBucket("loader-pool-test");
  MemoryStore store("loader-pool-test");
  auto dataset = WriteDataset(store, DatasetSpec{"ds/train", {40, 50, 60}, 3000});
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  DataLoaderOptions options;
  options.inputs = {"mem://loader-pool-test/" + dataset->glob};
  options.batch_size = 16;
  options.shuffle_buffer = 32;
  options.epochs = 1;
  std::shared_ptr<const RecordPool> pool;
  std::vector<Batch> kept;
  std::vector<std::vector<std::string>> expected;
  {
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    pool = (*loader)->record_pool();
    for (int i = 0; i < 3; ++i) {
      auto batch = (*loader)->Next();
      ASSERT_TRUE(batch.ok() && *batch) << batch.status().ToString();
      expected.push_back((*batch)->records.CopyOut());
      kept.push_back(std::move(**batch));
    }
    EXPECT_GT((*loader)->Counters().record_bytes_live, 0u);
  }  // the loader is destroyed with records still read ahead
  ASSERT_GT(pool->stats().blocks_live, 0u);
  for (size_t b = 0; b < kept.size(); ++b) {
    ASSERT_EQ(kept[b].records.size(), 16u);
    for (size_t r = 0; r < 16; ++r) {
      EXPECT_EQ(kept[b].records[r], expected[b][r]);
      EXPECT_NE(std::find(dataset->records.begin(), dataset->records.end(), kept[b].records[r]),
                dataset->records.end());
    }
  }
  kept.clear();
  EXPECT_EQ(pool->stats().blocks_live, 0u);
  EXPECT_EQ(pool->stats().bytes_live, 0u);
}

TEST(DataLoaderRecords, ALoaderOpenedAfterAnotherReusesItsPool) {
  // An epoch per loader, as spool.torch's StreamingDataset opens them: the
  // second loader, given the first one's pool, takes the blocks the first
  // filled instead of making new ones, and delivers the same records.
  MemoryStore::ClearBucket("loader-pool-handover");
  MemoryStore store("loader-pool-handover");
  auto dataset = WriteDataset(store, DatasetSpec{"ds/train", {300, 300, 300}, 20000});
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  DataLoaderOptions options;
  options.inputs = {"mem://loader-pool-handover/" + dataset->glob};
  options.batch_size = 16;
  options.shuffle_buffer = 64;
  options.memory_budget = 16 << 20;
  auto epoch = [&](const DataLoaderOptions& opened_with, std::vector<std::string>* records) {
    auto loader = DataLoader::Open(opened_with);
    EXPECT_TRUE(loader.ok()) << loader.status().ToString();
    if (!loader.ok()) return std::make_pair(uint64_t{0}, std::shared_ptr<RecordPool>());
    while (true) {
      auto batch = (*loader)->Next();
      EXPECT_TRUE(batch.ok()) << batch.status().ToString();
      if (!batch.ok() || !*batch) break;
      for (std::string& record : (*batch)->records.CopyOut()) records->push_back(std::move(record));
    }
    return std::make_pair((*loader)->Counters().record_blocks_made, (*loader)->record_pool());
  };
  std::vector<std::string> first, second;
  const auto [first_made, pool] = epoch(options, &first);
  ASSERT_TRUE(pool);
  ASSERT_GT(first_made, 8u);
  EXPECT_EQ(pool->stats().bytes_live, 0u);
  EXPECT_EQ(pool->stats().blocks_idle, first_made);  // all kept (within the budget) for the next loader
  options.record_pool = pool;
  const auto [second_made, same_pool] = epoch(options, &second);
  EXPECT_EQ(same_pool, pool);
  // Blocks made since the second loader opened: a few more at most, where
  // its peak happened to exceed the first one's.
  EXPECT_LE(second_made * 4, first_made) << second_made << " blocks made again, " << first_made << " the first time";
  EXPECT_EQ(pool->stats().blocks_made, first_made + second_made);
  EXPECT_EQ(second, first);
  EXPECT_EQ(first.size(), 900u);

  // A pool whose records the caller still holds in quantity (more than a
  // quarter of the budget) is not taken: the next loader would count them
  // against its budget and read one fetch at a time.
  std::vector<Batch> kept;
  {
    auto loader = DataLoader::Open(options);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    while (true) {
      auto batch = (*loader)->Next();
      ASSERT_TRUE(batch.ok()) << batch.status().ToString();
      if (!*batch) break;
      kept.push_back(std::move(**batch));
    }
  }
  ASSERT_GT(pool->bytes_live(), options.memory_budget / 4);
  auto next = DataLoader::Open(options);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_NE((*next)->record_pool(), pool);
}

// Reads every epoch of a dataset written to a bucket of its own; returns
// the loader's counters and the block size of its pool.
struct DrainedLoader {
  uint64_t records = 0;
  uint64_t dataset_records = 0;
  loader::LoaderCounters counters;
  size_t block_size = 0;
};

DrainedLoader Drain(const std::string& bucket, const std::vector<uint64_t>& shard_records, uint64_t record_bytes,
                    DataLoaderOptions options, records::Compression compression = records::Compression::kNone) {
  DrainedLoader out;
  MemoryStore::ClearBucket(bucket);
  MemoryStore store(bucket);
  auto dataset = WriteDataset(store, DatasetSpec{"ds/train", shard_records, record_bytes, compression});
  EXPECT_TRUE(dataset.ok()) << dataset.status().ToString();
  if (!dataset.ok()) return out;
  out.dataset_records = dataset->records.size();
  options.inputs = {"mem://" + bucket + "/" + dataset->glob};
  auto loader = DataLoader::Open(options);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return out;
  while (true) {
    auto batch = (*loader)->Next();
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    if (!batch.ok() || !*batch) break;
    out.records += (*batch)->records.size();
  }
  out.counters = (*loader)->Counters();
  out.block_size = (*loader)->record_pool()->block_size();
  return out;
}

TEST(DataLoaderRecords, SteadyStateReusesBlocks) {
  DataLoaderOptions options;
  options.batch_size = 8;
  options.epochs = 20;
  options.memory_budget = 16 << 20;
  const DrainedLoader run = Drain("loader-pool-reuse", {200, 200}, 4000, options);
  EXPECT_EQ(run.records, 20 * run.dataset_records);
  // 32 MB of records went through; the blocks made hold a small part of it.
  EXPECT_LT(run.counters.record_blocks_made * run.block_size, run.counters.bytes / 2)
      << run.counters.record_blocks_made << " blocks made";
}

TEST(DataLoaderRecords, NewShardsReadersReuseChunkBuffers) {
  // 40 shards read 5 times, 4 at a time: 200 readers, each of which needs
  // a few chunk buffers. Those of a finished reader serve the next one, so
  // the buffers made stay what 4 readers hold at once however many shards
  // go by (without the loader's own buffer pool each new reader took fresh
  // ones, beyond the process pool's 32 MiB idle; pipeline.h). Compressed
  // shards are read into chunk buffers wherever they are (uncompressed local
  // ones into the record pool's blocks: the next test).
  DataLoaderOptions options;
  options.batch_size = 8;
  options.epochs = 5;
  options.interleave = 4;
  options.memory_budget = 16 << 20;
  const DrainedLoader run =
      Drain("loader-chunk-reuse", std::vector<uint64_t>(40, 50), 20000, options, records::Compression::kGzip);
  EXPECT_EQ(run.records, 5 * run.dataset_records);
  EXPECT_GT(run.counters.read_buffers_made, 0u)
      << "the shard readers did not take their buffers from the loader's pool";
  // 200 readers went by; what 4 readers (plus prefetch) hold at once is far fewer.
  EXPECT_LT(run.counters.read_buffers_made, 200u) << run.counters.read_buffers_made << " chunk buffers made";
}

TEST(DataLoaderRecords, LocalShardsAreReadIntoThePoolsBlocksAndReused) {
  // Uncompressed shards in a local (here: memory) store are read straight
  // into the record pool's blocks, whose records are then views of them:
  // no chunk buffer is made, and the blocks of finished chunks come back
  // for the next ones, 200 readers and 200 MB later. (A shuffle buffer of
  // 64 records fits the budget: one of 1,024 records of 20 KB would not,
  // and would pin more blocks than the budget, copied or not.)
  DataLoaderOptions options;
  options.batch_size = 8;
  options.epochs = 5;
  options.interleave = 4;
  options.shuffle_buffer = 64;
  options.memory_budget = 16 << 20;
  const DrainedLoader run = Drain("loader-block-reads", std::vector<uint64_t>(40, 50), 20000, options);
  EXPECT_EQ(run.records, 5 * run.dataset_records);
  EXPECT_EQ(run.counters.read_buffers_made, 0u) << "local shards were read into chunk buffers, then copied";
  EXPECT_LT(run.counters.record_blocks_made * run.block_size, 2 * options.memory_budget)
      << run.counters.record_blocks_made << " blocks of " << run.block_size << " bytes made";
}

}  // namespace
}  // namespace spool::testing
