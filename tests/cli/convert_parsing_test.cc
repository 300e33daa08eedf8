// Unit tests of what `spool convert` parses: CSV records, JSON lines, column
// types and --schema; and of the progress line's text.
#include <gtest/gtest.h>

#include "cli/convert/columns.h"
#include "cli/convert/csv.h"
#include "cli/convert/json_line.h"
#include "cli/convert/text_lines.h"
#include "cli/progress.h"
#include "spool/core/storage/memory_store.h"

namespace spool::cli {
namespace {

std::vector<std::string> Split(std::string_view text, bool* complete = nullptr, std::string* problem = nullptr) {
  std::vector<std::string> fields;
  std::string ignored;
  bool done = SplitCsvRecord(text, &fields, problem ? problem : &ignored);
  if (complete) *complete = done;
  return fields;
}

TEST(CsvTest, SplitsQuotedAndEmptyFields) {
  EXPECT_EQ(Split("a,b,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Split("\"x, y\",\"say \"\"hi\"\"\","), (std::vector<std::string>{"x, y", "say \"hi\"", ""}));
  EXPECT_EQ(Split(""), (std::vector<std::string>{""}));
  EXPECT_EQ(Split(",,"), (std::vector<std::string>{"", "", ""}));
}

TEST(CsvTest, AQuotedFieldMayGoOnOverTheNextLine) {
  bool complete = true;
  Split("1,\"two", &complete);
  EXPECT_FALSE(complete);
  EXPECT_EQ(Split("1,\"two\nlines\",3", &complete), (std::vector<std::string>{"1", "two\nlines", "3"}));
  EXPECT_TRUE(complete);
}

TEST(CsvTest, StrayQuotesAreProblems) {
  std::string problem;
  Split("a,b\"c", nullptr, &problem);
  EXPECT_NE(problem.find("quote inside an unquoted field at column 2"), std::string::npos) << problem;
  Split("\"a\"b,c", nullptr, &problem);
  EXPECT_NE(problem.find("after a closing quote at column 1"), std::string::npos) << problem;
}

void Put(ObjectStore& store, std::string_view key, std::string_view content) {
  auto object = store.OpenWrite(key);
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  ASSERT_TRUE((*object)->Append(content).ok());
  ASSERT_TRUE((*object)->Close().ok());
}

std::vector<std::string> AllLines(ObjectStore& store, std::string_view key) {
  auto lines = TextLines::Open(store, key);
  EXPECT_TRUE(lines.ok()) << lines.status().ToString();
  std::vector<std::string> out;
  std::string line;
  while (lines.ok()) {
    auto more = (*lines)->Next(&line);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(line);
  }
  return out;
}

// Excel's "CSV UTF-8" and Notepad start the file with a byte-order mark; it
// must not become part of the first column's name.
TEST(TextLinesTest, DropsAUtf8ByteOrderMarkAndLineEndings) {
  MemoryStore store("convert-parsing-text-lines");
  Put(store, "excel.csv", "\xef\xbb\xbfid,v\r\n1,2\r\n");
  EXPECT_EQ(AllLines(store, "excel.csv"), (std::vector<std::string>{"id,v", "1,2"}));
  Put(store, "events.jsonl", "\xef\xbb\xbf{\"a\": 1}\n{\"a\": 2}");
  EXPECT_EQ(AllLines(store, "events.jsonl"), (std::vector<std::string>{"{\"a\": 1}", "{\"a\": 2}"}));
  // Only at the very start: elsewhere the bytes are the data's.
  Put(store, "later.csv", "id\n\xef\xbb\xbfx\n");
  EXPECT_EQ(AllLines(store, "later.csv"), (std::vector<std::string>{"id", "\xef\xbb\xbfx"}));
}

TEST(CsvTest, AByteOrderMarkIsNotPartOfTheFirstColumnsName) {
  MemoryStore store("convert-parsing-csv-bom");
  Put(store, "t.csv", "\xef\xbb\xbfid,v\r\n1,2\r\n");
  auto source = CsvSource::Open(store, "t.csv", std::nullopt);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto schema = (*source)->Schema();
  ASSERT_EQ(schema.size(), 2u);
  EXPECT_EQ(schema[0].first, "id");
  EXPECT_EQ(schema[1].first, "v");
}

TEST(ColumnsTest, InfersInt64ThenFloatThenBytes) {
  TypeInference ints, floats, bytes, empty;
  for (auto value : {"1", "-20", "", "+3"}) ints.See(value);
  for (auto value : {"1", "2.5", "1e-3", "nan"}) floats.See(value);
  for (auto value : {"1", "2.5", "n/a"}) bytes.See(value);
  EXPECT_EQ(ints.type(), ColumnType::kInt64);
  EXPECT_EQ(floats.type(), ColumnType::kFloat);
  EXPECT_EQ(bytes.type(), ColumnType::kBytes);
  EXPECT_EQ(empty.type(), ColumnType::kBytes);
  EXPECT_FALSE(ParseInt64("99999999999999999999"));
  EXPECT_FALSE(ParseFloat(" 1"));
  EXPECT_FALSE(ParseFloat("0x10"));
}

TEST(ColumnsTest, ParsesSchemas) {
  auto schema = ParseSchema("age:int64,score:float,name:bytes");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  ASSERT_EQ(schema->size(), 3u);
  EXPECT_EQ((*schema)[1].first, "score");
  EXPECT_EQ((*schema)[1].second, ColumnType::kFloat);
  EXPECT_FALSE(ParseSchema("age:int32").ok());
  EXPECT_FALSE(ParseSchema(":float").ok());
  EXPECT_FALSE(ParseSchema("").ok());
}

TEST(ColumnsTest, ValuesThatDoNotFitTheirTypeAreNamed) {
  tensorflow::Example example;
  EXPECT_EQ(SetFeatureFromText(example, "age", ColumnType::kInt64, "12"), "");
  EXPECT_EQ(SetFeatureFromText(example, "age", ColumnType::kInt64, "x"), "column \"age\": \"x\" is not an int64");
  EXPECT_EQ(SetFeatureFromText(example, "w", ColumnType::kFloat, "1.5kg"), "column \"w\": \"1.5kg\" is not a number");
}

TEST(JsonLineTest, ParsesScalarsListsAndEscapes) {
  std::vector<JsonField> fields;
  ASSERT_EQ(ParseJsonLine(R"({"a": 1, "b": -2.5e1, "s": "x\"\u00e9\n", "l": [1, 2], "t": true, "n": null})", &fields),
            "");
  ASSERT_EQ(fields.size(), 6u);
  EXPECT_TRUE(fields[0].values[0].integer);
  EXPECT_FALSE(fields[1].values[0].integer);
  EXPECT_EQ(fields[1].values[0].text, "-2.5e1");
  EXPECT_EQ(fields[2].values[0].text, "x\"\xc3\xa9\n");
  EXPECT_TRUE(fields[3].is_list);
  EXPECT_EQ(fields[3].values.size(), 2u);
  EXPECT_TRUE(fields[4].values[0].boolean);
  EXPECT_EQ(fields[5].values[0].kind, JsonScalar::Kind::kNull);
}

TEST(JsonLineTest, NamesWhatIsWrong) {
  std::vector<JsonField> fields;
  EXPECT_EQ(ParseJsonLine(R"({"m": {"a": 1}})", &fields), "\"m\" holds a nested object; flatten it into separate fields");
  EXPECT_NE(ParseJsonLine(R"({"m": [[1]]})", &fields).find("nested list"), std::string::npos);
  EXPECT_NE(ParseJsonLine(R"([1, 2])", &fields).find("expected '{'"), std::string::npos);
  EXPECT_NE(ParseJsonLine(R"({"a": 1,})", &fields).find("column 9"), std::string::npos);
  EXPECT_NE(ParseJsonLine(R"({"a": 01})", &fields).find("expected"), std::string::npos);
  EXPECT_NE(ParseJsonLine(R"({"a": "open)", &fields).find("never closed"), std::string::npos);
  EXPECT_NE(ParseJsonLine(R"({"a": 1} x)", &fields).find("end of the line"), std::string::npos);
}

TEST(ProgressTest, RendersAmountRateAndEta) {
  EXPECT_EQ(Progress::Render(Progress::Unit::kBytes, 50 << 20, 100 << 20, 2.0), "50.0 MiB / 100.0 MiB  25.0 MiB/s  ETA 0:02");
  EXPECT_EQ(Progress::Render(Progress::Unit::kRecords, 300, std::nullopt, 3.0), "300 records  100 records/s");
}

}  // namespace
}  // namespace spool::cli
