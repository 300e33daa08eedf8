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
#include "spool/records/loader/record_pool.h"
#include "tests/loader/test_dataset.h"

namespace spool::testing {
namespace {

using loader::Batch;
using loader::DataLoader;
using loader::DataLoaderOptions;
using loader::PooledRecord;
using loader::RecordList;
using loader::RecordPool;
using loader::RecordWriter;

TEST(RecordPool, RecordsShareABlockThatReturnsWhenTheLastOneDrops) {
  RecordPool pool(4096, 1 << 20);
  RecordWriter writer(&pool);
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
  RecordWriter writer(&pool);
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
    RecordWriter writer(&pool);
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
  RecordWriter writer(&pool);
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

TEST(DataLoaderRecords, SteadyStateReusesBlocks) {
  MemoryStore::ClearBucket("loader-pool-reuse");
  MemoryStore store("loader-pool-reuse");
  auto dataset = WriteDataset(store, DatasetSpec{"ds/train", {200, 200}, 4000});
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  DataLoaderOptions options;
  options.inputs = {"mem://loader-pool-reuse/" + dataset->glob};
  options.batch_size = 8;
  options.epochs = 20;
  options.memory_budget = 16 << 20;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  uint64_t records = 0;
  while (true) {
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (!*batch) break;
    records += (*batch)->records.size();
  }
  EXPECT_EQ(records, 20 * dataset->records.size());
  // 32 MB of records went through; the blocks made hold a small part of it.
  const auto counters = (*loader)->Counters();
  EXPECT_LT(counters.record_blocks_made * (*loader)->record_pool()->block_size(), counters.bytes / 2)
      << counters.record_blocks_made << " blocks made";
}

TEST(DataLoaderRecords, NewShardsReadersReuseChunkBuffers) {
  // 40 shards read 5 times, 4 at a time: 200 readers, each of which needs
  // a few chunk buffers. Those of a finished reader serve the next one, so
  // the buffers made stay what 4 readers hold at once however many shards
  // go by (without the loader's own buffer pool each new reader took fresh
  // ones, beyond the process pool's 32 MiB idle; pipeline.h).
  MemoryStore::ClearBucket("loader-chunk-reuse");
  MemoryStore store("loader-chunk-reuse");
  auto dataset = WriteDataset(store, DatasetSpec{"ds/train", std::vector<uint64_t>(40, 50), 20000});
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  DataLoaderOptions options;
  options.inputs = {"mem://loader-chunk-reuse/" + dataset->glob};
  options.batch_size = 8;
  options.epochs = 5;
  options.interleave = 4;
  options.memory_budget = 16 << 20;
  auto loader = DataLoader::Open(options);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  uint64_t records = 0;
  while (true) {
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (!*batch) break;
    records += (*batch)->records.size();
  }
  EXPECT_EQ(records, 5 * dataset->records.size());
  const auto counters = (*loader)->Counters();
  EXPECT_GT(counters.read_buffers_made, 0u) << "the shard readers did not take their buffers from the loader's pool";
  // 200 readers went by; what 4 readers (plus prefetch) hold at once is far fewer.
  EXPECT_LT(counters.read_buffers_made, 200u) << counters.read_buffers_made << " chunk buffers made";
}

}  // namespace
}  // namespace spool::testing
