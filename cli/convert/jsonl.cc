#include "cli/convert/jsonl.h"

#include "spool/records/example.h"

namespace spool::cli {
namespace {

// What one field has held over the whole file.
struct FieldKinds {
  bool strings = false;
  bool numbers = false;
  bool all_integers = true;

  void See(const JsonScalar& value) {
    switch (value.kind) {
      case JsonScalar::Kind::kString: strings = true; break;
      case JsonScalar::Kind::kNumber:
        numbers = true;
        all_integers = all_integers && value.integer;
        break;
      case JsonScalar::Kind::kBool: numbers = true; break;
      case JsonScalar::Kind::kNull: break;
    }
  }
  ColumnType Type() const {
    if (strings || !numbers) return ColumnType::kBytes;
    return all_integers ? ColumnType::kInt64 : ColumnType::kFloat;
  }
};

std::string TextOf(const JsonScalar& value) {
  if (value.kind == JsonScalar::Kind::kBool) return value.boolean ? "1" : "0";
  return value.text;
}

// Sets one field as `type`; "" or what does not fit.
std::string SetField(tensorflow::Example& example, const JsonField& field, ColumnType type) {
  std::vector<const JsonScalar*> values;
  for (const JsonScalar& value : field.values) {
    if (value.kind != JsonScalar::Kind::kNull) values.push_back(&value);
  }
  if (values.empty() && !field.is_list) return "";  // null: no feature
  auto wrong = [&](const JsonScalar& value, std::string_view want) {
    return "field \"" + field.name + "\": " + TextOf(value) + " is not " + std::string(want);
  };
  switch (type) {
    case ColumnType::kInt64: {
      std::vector<int64_t> ints;
      for (const JsonScalar* value : values) {
        std::optional<int64_t> parsed;
        if (value->kind != JsonScalar::Kind::kString) parsed = ParseInt64(TextOf(*value));
        if (!parsed) return wrong(*value, "an int64");
        ints.push_back(*parsed);
      }
      records::SetInt64s(example, field.name, std::span<const int64_t>(ints));
      return "";
    }
    case ColumnType::kFloat: {
      std::vector<float> floats;
      for (const JsonScalar* value : values) {
        std::optional<float> parsed;
        if (value->kind != JsonScalar::Kind::kString) parsed = ParseFloat(TextOf(*value));
        if (!parsed) return wrong(*value, "a number");
        floats.push_back(*parsed);
      }
      records::SetFloats(example, field.name, std::span<const float>(floats));
      return "";
    }
    case ColumnType::kBytes: {
      std::vector<std::string> strings;
      for (const JsonScalar* value : values) strings.push_back(TextOf(*value));
      records::SetBytes(example, field.name, std::span<const std::string>(strings));
      return "";
    }
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<JsonlSource>> JsonlSource::Open(
    ObjectStore& store, std::string key, std::optional<std::vector<std::pair<std::string, ColumnType>>> schema) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<TextLines> lines, TextLines::Open(store, key));
  std::vector<std::pair<std::string, ColumnType>> types = schema.value_or(decltype(types){});
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < types.size(); ++i) position[types[i].first] = i;
  // First pass: the fields and the kinds of their values, over well-formed lines.
  std::vector<FieldKinds> kinds(types.size());
  std::string line;
  std::vector<JsonField> fields;
  for (;;) {
    SPOOL_ASSIGN_OR_RETURN(bool more, lines->Next(&line));
    if (!more) break;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (!ParseJsonLine(line, &fields).empty()) continue;  // reported in the second pass
    for (const JsonField& field : fields) {
      auto [it, added] = position.emplace(field.name, types.size());
      if (added) {
        types.emplace_back(field.name, ColumnType::kBytes);
        kinds.emplace_back();
      }
      for (const JsonScalar& value : field.values) kinds[it->second].See(value);
    }
  }
  size_t given = schema ? schema->size() : 0;
  for (size_t i = given; i < types.size(); ++i) types[i].second = kinds[i].Type();
  SPOOL_ASSIGN_OR_RETURN(lines, TextLines::Open(store, key));
  return std::unique_ptr<JsonlSource>(new JsonlSource(std::move(lines), std::move(types)));
}

std::optional<ColumnType> JsonlSource::TypeOf(const std::string& name) const {
  for (const auto& [field, type] : types_) {
    if (field == name) return type;
  }
  return std::nullopt;
}

Result<SourceItem> JsonlSource::Next(tensorflow::Example* example, std::string* problem) {
  std::string line;
  for (;;) {
    SPOOL_ASSIGN_OR_RETURN(bool more, lines_->Next(&line));
    if (!more) return SourceItem::kEnd;
    if (line.find_first_not_of(" \t") != std::string::npos) break;
  }
  const std::string where = lines_->url() + ":" + std::to_string(lines_->line_number()) + ": ";
  std::vector<JsonField> fields;
  std::string wrong = ParseJsonLine(line, &fields);
  tensorflow::Example scratch;
  tensorflow::Example& out = example ? *example : scratch;
  out.Clear();
  for (size_t i = 0; wrong.empty() && i < fields.size(); ++i) {
    std::optional<ColumnType> type = TypeOf(fields[i].name);
    // A field the first pass did not see cannot appear (same bytes), but keep the message honest.
    wrong = type ? SetField(out, fields[i], *type) : "field \"" + fields[i].name + "\" is new";
  }
  if (!wrong.empty()) {
    *problem = where + wrong;
    return SourceItem::kBad;
  }
  return SourceItem::kExample;
}

std::vector<std::pair<std::string, std::string>> JsonlSource::Schema() const {
  std::vector<std::pair<std::string, std::string>> schema;
  for (const auto& [name, type] : types_) schema.emplace_back(name, FeatureKindOf(type));
  return schema;
}

}  // namespace spool::cli
