// CSV input of `spool convert`: a header row naming the columns, then one
// Example per row with one feature per column. Column types come from
// --schema or are inferred from every value of the column (int64, else
// float, else bytes), which takes a first pass over the file.
// RFC 4180 quoting: fields in double quotes may hold commas, newlines and
// doubled quotes ("").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/convert/columns.h"
#include "cli/convert/example_source.h"
#include "cli/convert/text_lines.h"
#include "spool/core/storage/object_store.h"

namespace spool::cli {

// Splits one CSV record into fields. Returns false while a quoted field is
// still open at the end of `text` (the record continues on the next line);
// sets `*problem` for text that is not CSV (a quote in the middle of an
// unquoted field, text after a closing quote).
bool SplitCsvRecord(std::string_view text, std::vector<std::string>* fields, std::string* problem);

class CsvSource : public ExampleSource {
 public:
  // Reads the header (and, without `schema`, every row to infer the types).
  static Result<std::unique_ptr<CsvSource>> Open(ObjectStore& store, std::string key,
                                                 std::optional<std::vector<std::pair<std::string, ColumnType>>> schema);

  Result<SourceItem> Next(tensorflow::Example* example, std::string* problem) override;
  std::vector<std::pair<std::string, std::string>> Schema() const override;

 private:
  CsvSource(std::unique_ptr<TextLines> lines, std::vector<std::string> columns, std::vector<ColumnType> types)
      : lines_(std::move(lines)), columns_(std::move(columns)), types_(std::move(types)) {}

  std::unique_ptr<TextLines> lines_;  // positioned after the header
  std::vector<std::string> columns_;
  std::vector<ColumnType> types_;
};

// The next record of `lines` (joining lines inside quoted fields): true and
// `*fields` set, or `*problem` set for a malformed one; false at the end.
// `*first_line` is the line the record started on.
Result<bool> ReadCsvRecord(TextLines& lines, std::vector<std::string>* fields, std::string* problem,
                           uint64_t* first_line);

}  // namespace spool::cli
