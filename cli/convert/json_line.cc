#include "cli/convert/json_line.h"

#include <cstdint>

namespace spool::cli {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::string Line(std::vector<JsonField>* fields) {
    fields->clear();
    SkipSpace();
    if (!Take('{')) return Expected("'{' (each line must be one JSON object)");
    SkipSpace();
    if (!Take('}')) {
      for (;;) {
        JsonField field;
        SkipSpace();
        if (Peek() != '"') return Expected("a quoted field name");
        if (!String(&field.name)) return error_;
        SkipSpace();
        if (!Take(':')) return Expected("':'");
        SkipSpace();
        if (Peek() == '[') {
          ++pos_;
          field.is_list = true;
          SkipSpace();
          if (!Take(']')) {
            for (;;) {
              SkipSpace();
              JsonScalar value;
              if (!Scalar(field.name, &value)) return error_;
              field.values.push_back(std::move(value));
              SkipSpace();
              if (Take(']')) break;
              if (!Take(',')) return Expected("',' or ']'");
            }
          }
        } else {
          JsonScalar value;
          if (!Scalar(field.name, &value)) return error_;
          field.values.push_back(std::move(value));
        }
        fields->push_back(std::move(field));
        SkipSpace();
        if (Take('}')) break;
        if (!Take(',')) return Expected("',' or '}'");
      }
    }
    SkipSpace();
    if (pos_ != text_.size()) return Expected("the end of the line after the object");
    return "";
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Take(char c) {
    if (Peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) ++pos_;
  }
  std::string Expected(std::string_view what) {
    return "expected " + std::string(what) + " at column " + std::to_string(pos_ + 1);
  }
  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  bool Scalar(const std::string& name, JsonScalar* value) {
    char c = Peek();
    if (c == '{') return Fail("\"" + name + "\" holds a nested object; flatten it into separate fields");
    if (c == '[') return Fail("\"" + name + "\" holds a nested list; only flat lists of numbers or strings fit");
    if (c == '"') {
      value->kind = JsonScalar::Kind::kString;
      return String(&value->text);
    }
    if (Word("true")) {
      value->kind = JsonScalar::Kind::kBool;
      value->boolean = true;
      return true;
    }
    if (Word("false")) {
      value->kind = JsonScalar::Kind::kBool;
      return true;
    }
    if (Word("null")) return true;
    return Number(value);
  }

  bool Word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool Number(JsonScalar* value) {
    size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ > from;
    };
    Take('-');
    if (Peek() == '0') {
      ++pos_;
    } else if (!digits()) {
      pos_ = start;
      return Fail(Expected("a value"));
    }
    bool integer = true;
    if (Take('.')) {
      integer = false;
      if (!digits()) return Fail(Expected("a digit"));
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      integer = false;
      if (!Take('+')) Take('-');
      if (!digits()) return Fail(Expected("a digit"));
    }
    value->kind = JsonScalar::Kind::kNumber;
    value->text.assign(text_.substr(start, pos_ - start));
    value->integer = integer;
    return true;
  }

  static void AppendUtf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      *out += static_cast<char>(code);
    } else if (code < 0x800) {
      *out += static_cast<char>(0xC0 | (code >> 6));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      *out += static_cast<char>(0xE0 | (code >> 12));
      *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (code >> 18));
      *out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  bool Hex4(uint32_t* code) {
    if (pos_ + 4 > text_.size()) return false;
    *code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      *code <<= 4;
      if (c >= '0' && c <= '9') *code |= c - '0';
      else if (c >= 'a' && c <= 'f') *code |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') *code |= c - 'A' + 10;
      else return false;
    }
    return true;
  }

  bool String(std::string* out) {
    ++pos_;  // the opening quote
    out->clear();
    for (;;) {
      if (pos_ >= text_.size()) return Fail("a string is never closed");
      char c = text_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return Fail(Expected("no control character in a string"));
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= text_.size()) return Fail("a string is never closed");
      char escape = text_[pos_++];
      switch (escape) {
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          uint32_t code = 0;
          if (!Hex4(&code)) return Fail(Expected("four hex digits after \\u"));
          if (code >= 0xD800 && code < 0xDC00 && Word("\\u")) {
            uint32_t low = 0;
            if (!Hex4(&low) || low < 0xDC00 || low >= 0xE000) return Fail(Expected("a low surrogate"));
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(code, out);
          break;
        }
        default:
          --pos_;
          return Fail(Expected("a valid escape"));
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::string ParseJsonLine(std::string_view line, std::vector<JsonField>* fields) { return Parser(line).Line(fields); }

}  // namespace spool::cli
