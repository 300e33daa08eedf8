#include "s3/flat_json.h"

#include <cctype>

namespace spool::s3 {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  char Peek() {
    SkipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  bool String(std::string* out) {
    if (!Consume('"')) return false;
    out->clear();
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return false;
      char e = text_[pos_++];
      switch (e) {
        case 'n': out->push_back('\n'); break;
        case 't': out->push_back('\t'); break;
        case 'r': out->push_back('\r'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'u': {
          if (pos_ + 4 > text_.size()) return false;
          unsigned code = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = text_[pos_++];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
            code = code * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                                                : (h | 0x20) - 'a' + 10);
          }
          if (code < 0x80) {
            out->push_back(static_cast<char>(code));
          } else if (code < 0x800) {
            out->push_back(static_cast<char>(0xc0 | (code >> 6)));
            out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
          } else {
            out->push_back(static_cast<char>(0xe0 | (code >> 12)));
            out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
            out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
          }
          break;
        }
        default: out->push_back(e);
      }
    }
    return false;
  }

  // A scalar as text, or a nested value skipped (returns "").
  bool Value(std::string* out) {
    char c = Peek();
    if (c == '"') return String(out);
    if (c == '{' || c == '[') return SkipNested(out);
    out->clear();
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' &&
           !std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      out->push_back(text_[pos_++]);
    }
    return !out->empty();
  }

  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  bool SkipNested(std::string* out) {
    out->clear();
    int depth = 0;
    std::string ignored;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '"') {
        if (!String(&ignored)) return false;
        continue;
      }
      ++pos_;
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return true;
    }
    return false;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::map<std::string, std::string>> ParseFlatJson(std::string_view text) {
  auto invalid = [&] {
    return InvalidArgumentError("expected a JSON object, got \"" + std::string(text.substr(0, 80)) + "\"");
  };
  Scanner scanner(text);
  std::map<std::string, std::string> out;
  if (!scanner.Consume('{')) return invalid();
  if (scanner.Consume('}')) return out;
  do {
    std::string key, value;
    if (!scanner.String(&key) || !scanner.Consume(':') || !scanner.Value(&value)) return invalid();
    out[key] = value;
  } while (scanner.Consume(','));
  if (!scanner.Consume('}') || !scanner.AtEnd()) return invalid();
  return out;
}

}  // namespace spool::s3
