// The tf.train.Example API and the JSON view.
#include "spool/records/example.h"

#include <gtest/gtest.h>

#include "spool/records/json_view.h"
#include "tests/records/test_util.h"

namespace spool::records {
namespace {

TEST(ExampleTest, BuildsAndReadsFeaturesByNameAndType) {
  tensorflow::Example example;
  SetInt64s(example, "label", {3, -1});
  SetFloats(example, "pixels", {0.5f, 1.5f});
  SetBytes(example, "id", {"a17", std::string("\0\xff", 2)});
  const std::string payload = SerializeExample(example);

  auto parsed = ParseExample(payload);
  ASSERT_TRUE(parsed.ok());
  auto labels = GetInt64s(*parsed, "label");
  ASSERT_TRUE(labels.ok());
  EXPECT_EQ(std::vector<int64_t>(labels->begin(), labels->end()), (std::vector<int64_t>{3, -1}));
  auto pixels = GetFloats(*parsed, "pixels");
  ASSERT_TRUE(pixels.ok());
  EXPECT_EQ(std::vector<float>(pixels->begin(), pixels->end()), (std::vector<float>{0.5f, 1.5f}));
  auto ids = GetBytes(*parsed, "id");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[1], std::string_view("\0\xff", 2));
  EXPECT_TRUE(HasFeature(*parsed, "id"));
  EXPECT_FALSE(HasFeature(*parsed, "nope"));

  // Setting again replaces.
  SetInt64s(example, "label", {9});
  EXPECT_EQ(GetInt64s(example, "label")->size(), 1u);
}

TEST(ExampleTest, MissingAndWrongTypeAreClearErrors) {
  tensorflow::Example example;
  SetInt64s(example, "label", {1});
  SetFloats(example, "score", {1});
  auto missing = GetFloats(example, "lable");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no feature 'lable'"), std::string::npos);
  EXPECT_NE(missing.status().message().find("it has: label, score"), std::string::npos) << missing.status().message();
  auto wrong = GetFloats(example, "label");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.status().message(),
            "feature 'label' is a int64_list, not a float_list; read it with the matching getter");
  EXPECT_EQ(GetBytes(example, "score").status().code(), StatusCode::kInvalidArgument);
}

TEST(ExampleTest, AFeatureWithNoKindReadsAsAnEmptyListOfAnyKind) {
  tensorflow::Example example;
  (*example.mutable_features()->mutable_feature())["unset"];
  EXPECT_EQ(KindOf(example.features().feature().at("unset")), FeatureKind::kNone);
  EXPECT_TRUE(GetInt64s(example, "unset")->empty());
  EXPECT_TRUE(GetFloats(example, "unset")->empty());
  EXPECT_TRUE(GetBytes(example, "unset")->empty());
}

TEST(ExampleTest, SerializationIsDeterministicAndPacked) {
  tensorflow::Example a;
  tensorflow::Example b;
  for (int i = 0; i < 50; ++i) SetInt64s(a, std::to_string(i * 7), {i});
  for (int i = 49; i >= 0; --i) SetInt64s(b, std::to_string(i * 7), {i});
  EXPECT_EQ(SerializeExample(a), SerializeExample(b));
  // Packed int64: Int64List{1, 2} is 0a 02 01 02.
  tensorflow::Int64List list;
  list.add_value(1);
  list.add_value(2);
  EXPECT_EQ(list.SerializeAsString(), std::string("\x0a\x02\x01\x02", 4));
  tensorflow::FloatList floats;
  floats.add_value(1.0f);
  EXPECT_EQ(floats.SerializeAsString(), std::string("\x0a\x04\x00\x00\x80\x3f", 6));
}

TEST(ExampleTest, NotAnExampleIsDataLoss) {
  EXPECT_EQ(ParseExample("\xff\xff\xff").status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(ParseExample("").ok());  // the empty Example
}

TEST(ExampleTest, SequenceExampleFeatureLists) {
  tensorflow::SequenceExample example;
  SetInt64s(*example.mutable_context(), "length", std::vector<int64_t>{2});
  auto& steps = (*example.mutable_feature_lists()->mutable_feature_list())["tokens"];
  steps.add_feature()->mutable_bytes_list()->add_value("a");
  steps.add_feature()->mutable_bytes_list()->add_value("b");
  auto parsed = ParseSequenceExample(SerializeSequenceExample(example));
  ASSERT_TRUE(parsed.ok());
  auto list = GetFeatureList(*parsed, "tokens");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ((*list)->feature_size(), 2);
  auto missing = GetFeatureList(*parsed, "tags");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("it has: tokens"), std::string::npos);
}

TEST(JsonViewTest, RendersRecordsWithTheProtobufJsonMapping) {
  tensorflow::Example example;
  SetInt64s(example, "label", {3});
  SetBytes(example, "id", {"hi"});
  auto json = RecordToJson(SerializeExample(example), PayloadType::kExample);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->rfind(R"({"features":{"feature":{)", 0), 0u) << *json;
  EXPECT_NE(json->find(R"("id":{"bytes_list":{"value":["aGk="]}})"), std::string::npos) << *json;
  EXPECT_NE(json->find(R"("label":{"int64_list":{"value":["3"]}})"), std::string::npos) << *json;
  EXPECT_EQ(RecordToJson("\xff", PayloadType::kExample).status().code(), StatusCode::kDataLoss);

  tensorflow::Example back;
  SPOOL_ASSERT_OK(JsonToMessage(*json, &back, "test"));
  EXPECT_EQ(SerializeExample(back), SerializeExample(example));
  EXPECT_EQ(JsonToMessage("{", &back, "bad.json").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace spool::records
