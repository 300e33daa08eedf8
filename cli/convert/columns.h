// Column types of tabular inputs (CSV, JSON Lines): parsing values, inferring
// a column's type from every value it holds, and the --schema flag.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/core/status.h"
#include "spool/records/example.pb.h"

namespace spool::cli {

enum class ColumnType { kInt64, kFloat, kBytes };

// "int64", "float", "bytes".
std::string_view ColumnTypeName(ColumnType type);
// "int64_list", "float_list", "bytes_list": the manifest's kinds.
std::string_view FeatureKindOf(ColumnType type);

// The whole of `text` as a decimal int64 / a float ("1.5", "-2e3", "nan").
std::optional<int64_t> ParseInt64(std::string_view text);
std::optional<float> ParseFloat(std::string_view text);

// What the values seen so far allow: int64 while every value is an integer,
// then float while every value is a number, then bytes. Empty values (missing
// data) do not count. A column with no value at all is bytes.
class TypeInference {
 public:
  void See(std::string_view value);
  ColumnType type() const;

 private:
  bool seen_ = false;
  bool all_int_ = true;
  bool all_float_ = true;
};

// "--schema name:int64,score:float,id:bytes" -> pairs in order.
// InvalidArgument naming the bad entry.
Result<std::vector<std::pair<std::string, ColumnType>>> ParseSchema(std::string_view text);

// Sets feature `name` of `example` from the text `value` as `type`; an empty
// value gives an empty list (missing data). Returns a description of what is
// wrong ("column \"age\": \"x\" is not an int64") or "" when it fits.
std::string SetFeatureFromText(tensorflow::Example& example, const std::string& name, ColumnType type,
                               std::string_view value);

}  // namespace spool::cli
