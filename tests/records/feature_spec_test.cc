// Decoding tf.train.Examples into dense arrays by a FeatureSpec.
#include "spool/records/feature_spec.h"

#include <gtest/gtest.h>

#include <vector>

#include "spool/records/example.h"

namespace spool::records {
namespace {

std::vector<tensorflow::Example> TwoExamples() {
  std::vector<tensorflow::Example> examples(2);
  SetFloats(examples[0], "pixels", {0.f, 1.f, 2.f, 3.f});
  SetInt64s(examples[0], "label", {7});
  SetBytes(examples[0], "id", {"a"});
  SetFloats(examples[1], "pixels", {4.f, 5.f, 6.f, 7.f});
  SetInt64s(examples[1], "label", {255});
  SetBytes(examples[1], "id", {"b"});
  return examples;
}

TEST(FeatureSpecTest, DecodesNumericFeaturesRowMajorInTheDeclaredDtype) {
  const auto examples = TwoExamples();
  FeatureSpec pixels{"pixels", FeatureDtype::kFloat64, {2, 2}, {}};
  std::vector<double> out(2 * pixels.elements());
  ASSERT_TRUE(DecodeFeature(examples, pixels, out.data()).ok());
  EXPECT_EQ(out, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));

  FeatureSpec label{"label", FeatureDtype::kUint8, {}, {}};
  std::vector<uint8_t> labels(2);
  ASSERT_TRUE(DecodeFeature(examples, label, labels.data()).ok());
  EXPECT_EQ(labels, (std::vector<uint8_t>{7, 255}));

  FeatureSpec id{"id", FeatureDtype::kBytes, {}, {}};
  std::vector<std::string> ids;
  ASSERT_TRUE(DecodeBytesFeature(examples, id, ids).ok());
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b"}));
}

TEST(FeatureSpecTest, MissingFeaturesTakeTheDefaultOrFailNamingTheExample) {
  auto examples = TwoExamples();
  examples[1].mutable_features()->mutable_feature()->erase("label");
  FeatureSpec label{"label", FeatureDtype::kInt64, {}, {}};
  std::vector<int64_t> out(2);
  Status missing = DecodeFeature(examples, label, out.data());
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("feature 'label' of example 1"), std::string::npos) << missing.message();

  label.default_value = int64_t{-1};
  ASSERT_TRUE(DecodeFeature(examples, label, out.data()).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{7, -1}));
}

TEST(FeatureSpecTest, WrongKindCountOrRangeAreInvalidArgument) {
  const auto examples = TwoExamples();
  std::vector<int64_t> ints(8);
  Status kind = DecodeFeature(examples, {"pixels", FeatureDtype::kInt64, {4}, {}}, ints.data());
  EXPECT_EQ(kind.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(kind.message().find("is stored as float_list; dtype int64 reads int64_list"), std::string::npos)
      << kind.message();

  std::vector<float> floats(10);
  Status count = DecodeFeature(examples, {"pixels", FeatureDtype::kFloat32, {5}, {}}, floats.data());
  EXPECT_EQ(count.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(count.message().find("has 4 values; the spec's shape (5,) needs 5"), std::string::npos)
      << count.message();

  tensorflow::Example big;
  SetInt64s(big, "label", {300});
  std::vector<uint8_t> bytes(1);
  Status range = DecodeFeature(std::span(&big, 1), {"label", FeatureDtype::kUint8, {}, {}}, bytes.data());
  EXPECT_EQ(range.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(range.message().find("holds 300, which does not fit uint8"), std::string::npos) << range.message();
}

TEST(FeatureSpecTest, BadSpecsAreRefusedBeforeAnyData) {
  std::vector<FeatureSpec> twice{{"x", FeatureDtype::kInt64, {}, {}}, {"x", FeatureDtype::kInt64, {}, {}}};
  EXPECT_EQ(CheckFeatureSpecs(twice).code(), StatusCode::kInvalidArgument);
  std::vector<FeatureSpec> negative{{"x", FeatureDtype::kInt64, {-1}, {}}};
  EXPECT_EQ(CheckFeatureSpecs(negative).code(), StatusCode::kInvalidArgument);
  std::vector<FeatureSpec> wrong_default{{"x", FeatureDtype::kBytes, {}, int64_t{0}}};
  EXPECT_EQ(CheckFeatureSpecs(wrong_default).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFeatureDtype("float16").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseFeatureDtype("uint8"), FeatureDtype::kUint8);
}

}  // namespace
}  // namespace spool::records
