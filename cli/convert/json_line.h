// The JSON of one JSON Lines record: an object whose values are numbers,
// strings, booleans, null, or flat lists of those. A small strict parser
// (RFC 8259) that keeps each number's text, so 3 stays an int64 and 3.0 a
// float. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spool::cli {

struct JsonScalar {
  enum class Kind { kNull, kBool, kNumber, kString } kind = Kind::kNull;
  std::string text;          // the string's value, or the number's literal
  bool integer = false;      // a number without fraction or exponent
  bool boolean = false;
};

struct JsonField {
  std::string name;
  bool is_list = false;
  std::vector<JsonScalar> values;  // one unless is_list
};

// Parses `line` into fields in their order. Returns "" or what is wrong
// ("nested object in \"meta\"", "expected ',' at column 17").
std::string ParseJsonLine(std::string_view line, std::vector<JsonField>* fields);

}  // namespace spool::cli
