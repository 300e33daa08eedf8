// JSON Lines input of `spool convert`: one JSON object per line, one Example
// per object, one feature per field. Values are numbers, strings, booleans
// (int64 0/1) or flat lists of them; null leaves the feature out; a nested
// object or list is a malformed line. A field's type is int64 when every
// number it holds is an integer, else float; strings make it bytes (numbers
// mixed in keep their text). --schema fixes types instead of inferring them.
// Inference takes a first pass over the file.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/convert/columns.h"
#include "cli/convert/example_source.h"
#include "cli/convert/json_line.h"
#include "cli/convert/text_lines.h"
#include "spool/core/storage/object_store.h"

namespace spool::cli {

class JsonlSource : public ExampleSource {
 public:
  static Result<std::unique_ptr<JsonlSource>> Open(
      ObjectStore& store, std::string key, std::optional<std::vector<std::pair<std::string, ColumnType>>> schema);

  Result<SourceItem> Next(tensorflow::Example* example, std::string* problem) override;
  std::vector<std::pair<std::string, std::string>> Schema() const override;

 private:
  JsonlSource(std::unique_ptr<TextLines> lines, std::vector<std::pair<std::string, ColumnType>> types)
      : lines_(std::move(lines)), types_(std::move(types)) {}
  std::optional<ColumnType> TypeOf(const std::string& name) const;

  std::unique_ptr<TextLines> lines_;
  std::vector<std::pair<std::string, ColumnType>> types_;  // in order of first appearance
};

}  // namespace spool::cli
