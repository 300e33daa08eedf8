// The DataLoader behaviour suite, run on every store: the unit test binary
// instantiates it on the memory and local stores, the integration binary on
// S3 (Ceph RGW).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <memory>
#include <string>

#include "spool/core/storage/object_store.h"

namespace spool::testing {

struct StoreUnderTest {
  std::string name;
  // A store and a fresh key prefix (a folder no other test uses).
  std::function<std::shared_ptr<ObjectStore>()> store;
  std::function<std::string(const std::string& test_name)> prefix;
};

class LoaderSuite : public ::testing::TestWithParam<StoreUnderTest> {
 protected:
  void SetUp() override {
    store_ = GetParam().store();
    ASSERT_NE(store_, nullptr);
    prefix_ = GetParam().prefix(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::shared_ptr<ObjectStore> store_;
  std::string prefix_;
};

inline void PrintTo(const StoreUnderTest& store, std::ostream* out) { *out << store.name; }

inline std::string StoreName(const ::testing::TestParamInfo<StoreUnderTest>& info) { return info.param.name; }

}  // namespace spool::testing
