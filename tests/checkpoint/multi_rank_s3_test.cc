// Multi-rank checkpoints on the Ceph RGW of the ceph_rgw fixture: the same
// scenarios as the unit test (tests/checkpoint/multi_rank_scenarios.h), each
// under a root of its own in the fixture's bucket, deleted afterwards.
#include <gtest/gtest.h>

#include <random>

#include "spool/register_backends.h"
#include "spool/core/storage/registry.h"
#include "tests/checkpoint/multi_rank_scenarios.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dir.h"

namespace spool::checkpoint {
namespace {

class MultiRankS3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterAllBackends();
    const std::string bucket = test_support::S3TestBucket();
    ASSERT_FALSE(bucket.empty()) << "SPOOL_S3_TEST_BUCKET is not set: run under the ceph_rgw fixture";
    std::random_device random;
    auto location = OpenLocation("s3://" + bucket + "/multi-rank-test/" + std::to_string(random()) + "/ckpt");
    ASSERT_TRUE(location.ok()) << location.status().ToString();
    store_ = location->store;
    root_ = location->key;
  }
  void TearDown() override {
    if (!store_) return;
    ListOptions options;
    options.prefix = root_ + "/";
    if (auto listed = ListAll(*store_, options); listed.ok()) {
      std::vector<std::string> keys;
      for (const ObjectInfo& object : listed->objects) keys.push_back(object.key);
      if (!keys.empty()) store_->DeleteMany(keys).status().IgnoreError();
    }
  }

  test_support::TempDir scratch_{"spool-ckpt-multi-rank-s3"};
  std::shared_ptr<ObjectStore> store_;
  std::string root_;
};

TEST_F(MultiRankS3Test, ConcurrentRanksRestoreByteIdentical) {
  testing::ConcurrentRanksRestoreByteIdentical(store_, root_, scratch_.path());
}

TEST_F(MultiRankS3Test, RankPrefixFanoutSavesRestoresVerifiesAndPrunes) {
  testing::RankPrefixFanoutSavesRestoresVerifiesAndPrunes(store_, root_, scratch_.path());
}

TEST_F(MultiRankS3Test, MissingRanksTimeOutAndLeftoversAreCleaned) {
  testing::MissingRanksTimeOutAndLeftoversAreCleaned(store_, root_, scratch_.path());
}

TEST_F(MultiRankS3Test, StalePartOfAnEarlierAttemptIsNotCommitted) {
  testing::StalePartOfAnEarlierAttemptIsNotCommitted(store_, root_, scratch_.path());
}

}  // namespace
}  // namespace spool::checkpoint
