// A loader state names the inputs it was taken on (LoaderState::fingerprint):
// a state of one dataset is refused by a loader over another, even one with
// the same seed, shape and partition count, while a copy of the same dataset
// (its manifest and shards under another prefix) resumes it. Part of the
// loader suite: runs on the memory and local stores and on Ceph RGW.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spool/records/loader/data_loader.h"
#include "tests/loader/loader_suite.h"
#include "tests/loader/test_dataset.h"

namespace spool::testing {
using loader::DataLoader;
using loader::DataLoaderOptions;
using loader::LoaderState;

namespace {

Dataset Write(ObjectStore& store, const std::string& prefix, uint64_t record_bytes) {
  DatasetSpec spec{prefix, {17, 3, 0, 41, 9}};
  spec.record_bytes = record_bytes;
  spec.write_manifest = true;
  auto dataset = WriteDataset(store, spec);
  EXPECT_TRUE(dataset.ok()) << dataset.status().ToString();
  return dataset.ok() ? *dataset : Dataset{};
}

struct Mode {
  const char* name;
  uint64_t partitions;  // 0: a fixed job shape
};

DataLoaderOptions Options(const std::shared_ptr<ObjectStore>& store, const std::string& input, Mode mode) {
  DataLoaderOptions options;
  options.store = store;
  options.inputs = {input};
  options.seed = 3;
  options.batch_size = 4;
  options.partitions = mode.partitions;
  options.global_batch_size = mode.partitions * 2;
  options.shuffle_buffer = 8;
  options.rank = 0;
  options.world_size = 1;
  return options;
}

TEST_P(LoaderSuite, StateOfAnotherDatasetIsRefused) {
  const Dataset first = Write(*store_, prefix_ + "/a/train", 64);
  const Dataset other = Write(*store_, prefix_ + "/b/train", 80);  // same shards and counts, other records
  const Dataset copy = Write(*store_, prefix_ + "/c/train", 64);   // the first dataset, copied
  for (Mode mode : {Mode{"fixed", 0}, Mode{"elastic", 4}}) {
    SCOPED_TRACE(mode.name);
    for (bool manifest : {true, false}) {
      SCOPED_TRACE(manifest ? "manifest" : "glob");
      auto input = [&](const Dataset& d) { return manifest ? d.manifest_key : d.glob; };
      auto loader = DataLoader::Open(Options(store_, input(first), mode));
      ASSERT_TRUE(loader.ok()) << loader.status().ToString();
      std::vector<std::string> taken;
      ASSERT_TRUE(Drain(**loader, &taken, nullptr, 2).ok());
      const LoaderState state = (*loader)->State();
      ASSERT_EQ(state.fingerprint.size(), 16u);
      EXPECT_NE(state.Encode().find(" fingerprint=" + state.fingerprint), std::string::npos) << state.Encode();
      auto decoded = LoaderState::Decode(state.Encode());
      ASSERT_TRUE(decoded.ok());
      EXPECT_EQ(*decoded, state);
      auto fingerprint = DataLoader::InputsFingerprint(Options(store_, input(first), mode));
      ASSERT_TRUE(fingerprint.ok());
      EXPECT_EQ(*fingerprint, state.fingerprint);

      auto elsewhere = DataLoader::Open(Options(store_, input(other), mode));
      ASSERT_TRUE(elsewhere.ok());
      Status refused = (*elsewhere)->Resume(*decoded);
      EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(refused.message().find("taken on other inputs"), std::string::npos) << refused.ToString();

      // A state written before states carried a fingerprint is not checked.
      LoaderState unnamed = state;
      unnamed.fingerprint.clear();
      EXPECT_TRUE((*elsewhere)->Resume(unnamed).ok());

      // The same records under another prefix: with a manifest (names
      // relative to it, sizes, counts, CRC32C) it is the same dataset and
      // resumes; from a listing the shards' URLs name it, so it does not.
      auto copied = DataLoader::Open(Options(store_, input(copy), mode));
      ASSERT_TRUE(copied.ok());
      Status resumed = (*copied)->Resume(state);
      if (!manifest) {
        EXPECT_EQ(resumed.code(), StatusCode::kInvalidArgument);
        continue;
      }
      ASSERT_TRUE(resumed.ok()) << resumed.ToString();
      std::vector<std::string> rest, expected;
      ASSERT_TRUE(Drain(**copied, &rest).ok());
      ASSERT_TRUE(Drain(**loader, &expected).ok());
      EXPECT_EQ(rest, expected);
    }
  }
}

}  // namespace
}  // namespace spool::testing
