// The loader's globs are records::GlobMatch (spool/records/dataset.h).
#include <gtest/gtest.h>

#include "spool/records/dataset.h"

namespace spool::loader {
namespace {

using records::GlobMatch;
using records::HasWildcard;

TEST(Glob, StarStaysWithinAFolder) {
  EXPECT_TRUE(GlobMatch("data/train-*.tfrecord", "data/train-00001.tfrecord"));
  EXPECT_TRUE(GlobMatch("data/train-*.tfrecord", "data/train-.tfrecord"));
  EXPECT_FALSE(GlobMatch("data/train-*.tfrecord", "data/train-1/x.tfrecord"));
  EXPECT_FALSE(GlobMatch("data/train-*.tfrecord", "data/train-1.tfrecord.gz"));
  EXPECT_TRUE(GlobMatch("data/*/part-*", "data/a/part-1"));
  EXPECT_FALSE(GlobMatch("data/*/part-*", "data/a/b/part-1"));
}

TEST(Glob, DoubleStarCrossesFolders) {
  EXPECT_TRUE(GlobMatch("data/**.tfrecord", "data/a/b/c.tfrecord"));
  EXPECT_TRUE(GlobMatch("data/**/c.tfrecord", "data/a/b/c.tfrecord"));
  EXPECT_FALSE(GlobMatch("data/**.tfrecord", "other/c.tfrecord"));
}

TEST(Glob, QuestionMarkAndClasses) {
  EXPECT_TRUE(GlobMatch("s-?.rec", "s-1.rec"));
  EXPECT_FALSE(GlobMatch("s-?.rec", "s-12.rec"));
  EXPECT_TRUE(GlobMatch("s-[0-3].rec", "s-2.rec"));
  EXPECT_FALSE(GlobMatch("s-[0-3].rec", "s-7.rec"));
  EXPECT_TRUE(GlobMatch("s-[!0-3].rec", "s-7.rec"));
  EXPECT_TRUE(HasWildcard("a/*"));
  EXPECT_FALSE(HasWildcard("a/b.tfrecord"));
}

}  // namespace
}  // namespace spool::loader
