// The flat JSON objects credential endpoints answer with.
#include "spool/s3/flat_json.h"

#include <gtest/gtest.h>

namespace spool::s3 {
namespace {

TEST(FlatJson, StringsNumbersAndEscapes) {
  auto json = ParseFlatJson(R"( {"Version": 1, "AccessKeyId":"AKID", "Token":"a\"b\\c\/d\u00e9",
                                 "Ok": true, "Nothing": null} )");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ((*json)["Version"], "1");
  EXPECT_EQ((*json)["AccessKeyId"], "AKID");
  EXPECT_EQ((*json)["Token"], "a\"b\\c/d\xc3\xa9");
  EXPECT_EQ((*json)["Ok"], "true");
  EXPECT_EQ((*json)["Nothing"], "null");
}

TEST(FlatJson, NestedValuesAreSkipped) {
  auto json = ParseFlatJson(R"({"a": {"b": [1, "}"]}, "c": "d", "e": []})");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ((*json)["c"], "d");
}

TEST(FlatJson, MalformedTextIsInvalidArgument) {
  // (protobuf's JSON parser tolerates a trailing comma, so that is not listed.)
  for (const char* bad : {"", "[]", "{", "{\"a\"}", "{\"a\": }", "{\"a\": 1} trailing", "{\"a\": \"x", "{\"a\": \"\\uzzzz\"}"}) {
    EXPECT_EQ(ParseFlatJson(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(ParseFlatJson("{}").ok());
}

}  // namespace
}  // namespace spool::s3
