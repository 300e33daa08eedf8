#include "cli/convert/columns.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "spool/records/example.h"

namespace spool::cli {

std::string_view ColumnTypeName(ColumnType type) {
  switch (type) {
    case ColumnType::kInt64: return "int64";
    case ColumnType::kFloat: return "float";
    case ColumnType::kBytes: return "bytes";
  }
  return "bytes";
}

std::string_view FeatureKindOf(ColumnType type) {
  switch (type) {
    case ColumnType::kInt64: return "int64_list";
    case ColumnType::kFloat: return "float_list";
    case ColumnType::kBytes: return "bytes_list";
  }
  return "bytes_list";
}

std::optional<int64_t> ParseInt64(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<float> ParseFloat(std::string_view text) {
  if (text.empty() || text.front() == ' ' || text.back() == ' ') return std::nullopt;
  // strtof accepts what CSV writers produce ("1e-3", "inf", "NaN"); from_chars
  // for float is missing from some standard libraries still in use.
  std::string copy(text);
  char* end = nullptr;
  float value = std::strtof(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  if (copy.starts_with("0x") || copy.starts_with("-0x") || copy.starts_with("0X")) return std::nullopt;
  return value;
}

void TypeInference::See(std::string_view value) {
  if (value.empty()) return;
  seen_ = true;
  if (all_int_ && !ParseInt64(value)) all_int_ = false;
  if (!all_int_ && all_float_ && !ParseFloat(value)) all_float_ = false;
}

ColumnType TypeInference::type() const {
  if (!seen_) return ColumnType::kBytes;
  if (all_int_) return ColumnType::kInt64;
  if (all_float_) return ColumnType::kFloat;
  return ColumnType::kBytes;
}

Result<std::vector<std::pair<std::string, ColumnType>>> ParseSchema(std::string_view text) {
  std::vector<std::pair<std::string, ColumnType>> schema;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view entry = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t colon = entry.rfind(':');
    std::string_view type = colon == std::string_view::npos ? "" : entry.substr(colon + 1);
    std::string name(entry.substr(0, colon == std::string_view::npos ? entry.size() : colon));
    if (name.empty() || (type != "int64" && type != "float" && type != "bytes")) {
      return InvalidArgumentError("--schema entry \"" + std::string(entry) +
                                  "\" should be name:int64, name:float or name:bytes");
    }
    schema.emplace_back(std::move(name), type == "int64"   ? ColumnType::kInt64
                                         : type == "float" ? ColumnType::kFloat
                                                           : ColumnType::kBytes);
  }
  if (schema.empty()) return InvalidArgumentError("--schema is empty; give name:type,name:type,...");
  return schema;
}

std::string SetFeatureFromText(tensorflow::Example& example, const std::string& name, ColumnType type,
                               std::string_view value) {
  switch (type) {
    case ColumnType::kInt64: {
      if (value.empty()) {
        records::SetInt64s(example, name, std::span<const int64_t>());
        return "";
      }
      std::optional<int64_t> parsed = ParseInt64(value);
      if (!parsed) return "column \"" + name + "\": \"" + std::string(value) + "\" is not an int64";
      records::SetInt64s(example, name, {*parsed});
      return "";
    }
    case ColumnType::kFloat: {
      if (value.empty()) {
        records::SetFloats(example, name, std::span<const float>());
        return "";
      }
      std::optional<float> parsed = ParseFloat(value);
      if (!parsed) return "column \"" + name + "\": \"" + std::string(value) + "\" is not a number";
      records::SetFloats(example, name, {*parsed});
      return "";
    }
    case ColumnType::kBytes:
      if (value.empty()) {
        records::SetBytes(example, name, std::span<const std::string>());
      } else {
        records::SetBytes(example, name, {value});
      }
      return "";
  }
  return "";
}

}  // namespace spool::cli
