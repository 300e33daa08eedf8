#include "cli/convert/csv.h"

#include <algorithm>

namespace spool::cli {

bool SplitCsvRecord(std::string_view text, std::vector<std::string>* fields, std::string* problem) {
  fields->clear();
  problem->clear();
  std::string field;
  size_t i = 0;
  for (;;) {
    field.clear();
    if (i < text.size() && text[i] == '"') {
      ++i;
      for (;;) {
        if (i >= text.size()) return false;  // the quoted field goes on
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += text[i++];
      }
      if (i < text.size() && text[i] != ',') {
        *problem = "unexpected text after a closing quote at column " + std::to_string(fields->size() + 1);
        return true;
      }
    } else {
      size_t end = std::min(text.find(',', i), text.size());
      field.assign(text.substr(i, end - i));
      if (field.find('"') != std::string::npos) {
        *problem = "a quote inside an unquoted field at column " + std::to_string(fields->size() + 1) +
                   " (quote the whole field and double the quote)";
        return true;
      }
      i = end;
    }
    fields->push_back(field);
    if (i >= text.size()) return true;
    ++i;  // the comma
    if (i == text.size()) {
      fields->emplace_back();  // a trailing comma: one more, empty field
      return true;
    }
  }
}

Result<bool> ReadCsvRecord(TextLines& lines, std::vector<std::string>* fields, std::string* problem,
                           uint64_t* first_line) {
  std::string text, line;
  SPOOL_ASSIGN_OR_RETURN(bool more, lines.Next(&text));
  if (!more) return false;
  *first_line = lines.line_number();
  while (!SplitCsvRecord(text, fields, problem)) {
    SPOOL_ASSIGN_OR_RETURN(more, lines.Next(&line));
    if (!more) {
      *problem = "a quoted field is never closed";
      return true;
    }
    text += '\n';
    text += line;
  }
  return true;
}

Result<std::unique_ptr<CsvSource>> CsvSource::Open(
    ObjectStore& store, std::string key, std::optional<std::vector<std::pair<std::string, ColumnType>>> schema) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<TextLines> lines, TextLines::Open(store, key));
  std::vector<std::string> columns;
  std::string problem;
  uint64_t line = 0;
  SPOOL_ASSIGN_OR_RETURN(bool any, ReadCsvRecord(*lines, &columns, &problem, &line));
  if (!any) return InvalidArgumentError(lines->url() + " is empty; a CSV file needs a header row naming the columns");
  if (!problem.empty()) return InvalidArgumentError(lines->url() + ":" + std::to_string(line) + ": header: " + problem);
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].empty()) {
      return InvalidArgumentError(lines->url() + ":1: column " + std::to_string(i + 1) +
                                  " of the header has no name; the first row must name every column");
    }
    if (std::find(columns.begin(), columns.begin() + i, columns[i]) != columns.begin() + i) {
      return InvalidArgumentError(lines->url() + ":1: the header names column \"" + columns[i] +
                                  "\" twice; feature names must be unique");
    }
  }

  std::vector<ColumnType> types(columns.size(), ColumnType::kBytes);
  if (schema) {
    for (const auto& [name, type] : *schema) {
      auto it = std::find(columns.begin(), columns.end(), name);
      if (it == columns.end()) {
        return InvalidArgumentError("--schema names column \"" + name + "\", which the header of " + lines->url() +
                                    " does not have");
      }
      types[it - columns.begin()] = type;
    }
  } else {
    // First pass: every value of every well-formed row.
    std::vector<TypeInference> inference(columns.size());
    std::vector<std::string> fields;
    for (;;) {
      SPOOL_ASSIGN_OR_RETURN(bool more, ReadCsvRecord(*lines, &fields, &problem, &line));
      if (!more) break;
      if (!problem.empty() || fields.size() != columns.size()) continue;  // reported in the second pass
      for (size_t i = 0; i < fields.size(); ++i) inference[i].See(fields[i]);
    }
    for (size_t i = 0; i < columns.size(); ++i) types[i] = inference[i].type();
    SPOOL_ASSIGN_OR_RETURN(lines, TextLines::Open(store, key));
    SPOOL_RETURN_IF_ERROR(ReadCsvRecord(*lines, &fields, &problem, &line).status());  // the header again
  }
  return std::unique_ptr<CsvSource>(new CsvSource(std::move(lines), std::move(columns), std::move(types)));
}

Result<SourceItem> CsvSource::Next(tensorflow::Example* example, std::string* problem) {
  std::vector<std::string> fields;
  uint64_t line = 0;
  for (;;) {
    SPOOL_ASSIGN_OR_RETURN(bool more, ReadCsvRecord(*lines_, &fields, problem, &line));
    if (!more) return SourceItem::kEnd;
    if (problem->empty() && fields.size() == 1 && fields[0].empty() && columns_.size() > 1) continue;  // blank line
    break;
  }
  std::string where = lines_->url() + ":" + std::to_string(line) + ": ";
  if (!problem->empty()) {
    *problem = where + *problem;
    return SourceItem::kBad;
  }
  if (fields.size() != columns_.size()) {
    *problem = where + "expected " + std::to_string(columns_.size()) + " fields (as in the header), found " +
               std::to_string(fields.size());
    return SourceItem::kBad;
  }
  tensorflow::Example scratch;
  tensorflow::Example& out = example ? *example : scratch;
  out.Clear();
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string wrong = SetFeatureFromText(out, columns_[i], types_[i], fields[i]);
    if (!wrong.empty()) {
      *problem = where + wrong;
      return SourceItem::kBad;
    }
  }
  return SourceItem::kExample;
}

std::vector<std::pair<std::string, std::string>> CsvSource::Schema() const {
  std::vector<std::pair<std::string, std::string>> schema;
  for (size_t i = 0; i < columns_.size(); ++i) schema.emplace_back(columns_[i], FeatureKindOf(types_[i]));
  return schema;
}

}  // namespace spool::cli
