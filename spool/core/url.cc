#include "spool/core/url.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "spool/core/strings.h"

namespace spool {
namespace {

constexpr size_t kMaxObjectKeyBytes = 1024;  // S3 and GCS both allow 1024 bytes

Status Malformed(std::string_view text, std::string_view why) {
  return InvalidArgumentError("invalid URL \"" + std::string(text) + "\": " + std::string(why));
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// S3: 3-63 characters of lowercase letters, digits, '.' and '-', starting and
// ending with a letter or digit, no "..".
// GCS: the same plus '_', and names with dots may reach 222 characters as
// long as each dot-separated part has at most 63.
// mem: any non-empty name of letters, digits, '.', '_' and '-'.
// Returns what is wrong, or an empty string.
std::string CheckBucket(std::string_view scheme, std::string_view bucket) {
  if (bucket.empty()) return "the bucket name is empty";
  if (scheme == "mem") {
    for (char c : bucket) {
      if (!IsLowerAlnum(c) && !(c >= 'A' && c <= 'Z') && c != '.' && c != '_' && c != '-') {
        return "bucket names may hold only letters, digits, '.', '_' and '-'";
      }
    }
    return "";
  }
  const bool gcs = scheme == "gs";
  const size_t max_length = gcs && bucket.find('.') != std::string_view::npos ? 222 : 63;
  if (bucket.size() < 3 || bucket.size() > max_length) {
    return "bucket names are 3 to " + std::to_string(max_length) + " characters long";
  }
  for (char c : bucket) {
    if (!IsLowerAlnum(c) && c != '.' && c != '-' && !(gcs && c == '_')) {
      return gcs ? "bucket names may hold only lowercase letters, digits, '.', '_' and '-'"
                 : "bucket names may hold only lowercase letters, digits, '.' and '-'";
    }
  }
  if (!IsLowerAlnum(bucket.front()) || !IsLowerAlnum(bucket.back())) {
    return "bucket names start and end with a lowercase letter or digit";
  }
  if (bucket.find("..") != std::string_view::npos) return "bucket names may not contain \"..\"";
  if (gcs) {
    size_t start = 0;
    while (start <= bucket.size()) {
      size_t dot = std::min(bucket.find('.', start), bucket.size());
      if (dot - start > 63) return "each dot-separated part of a bucket name has at most 63 characters";
      start = dot + 1;
    }
  }
  return "";
}

// A local path made absolute and lexically normal ("a/./b/../c" -> "/cwd/a/c"),
// keeping a trailing '/' (it marks a folder prefix).
Result<std::string> AbsoluteLocalPath(std::string_view text, std::string_view path) {
  std::filesystem::path p{std::string(path)};
  if (p.is_relative()) {
    std::error_code ec;
    std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (ec) return Malformed(text, "cannot resolve a relative path: " + ec.message());
    p = cwd / p;
  }
  std::string normal = p.lexically_normal().generic_string();
  if (normal.empty() || normal.front() != '/') return Malformed(text, "not an absolute path");
  return normal;
}

Result<Url> ParseLocal(std::string_view text, std::string_view path) {
  if (path.empty()) return Malformed(text, "the path is empty");
  SPOOL_ASSIGN_OR_RETURN(std::string absolute, AbsoluteLocalPath(text, path));
  Url url;
  url.scheme = "file";
  url.key = absolute.substr(1);
  return url;
}

Result<Url> ParseFileUrl(std::string_view text, std::string_view rest) {
  // file:///abs/path, file://localhost/abs/path, or RFC 8089's file:/abs/path.
  if (rest.starts_with("//")) {
    rest.remove_prefix(2);
    size_t slash = rest.find('/');
    std::string_view host = rest.substr(0, slash);
    if (!host.empty() && AsciiToLower(host) != "localhost") {
      return Malformed(text, "file URLs name no host; write file:///absolute/path");
    }
    if (slash == std::string_view::npos) return Malformed(text, "the path is empty; write file:///absolute/path");
    rest.remove_prefix(slash);
  }
  if (!rest.starts_with('/')) return Malformed(text, "file URLs take an absolute path; write file:///absolute/path");
  return ParseLocal(text, rest);
}

}  // namespace

std::string Url::ToString() const {
  if (scheme == "file") return "file:///" + key;
  return scheme + "://" + bucket + (key.empty() ? "" : "/" + key);
}

Url Url::WithKey(std::string new_key) const {
  Url copy = *this;
  copy.key = std::move(new_key);
  return copy;
}

Result<Url> ParseUrl(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("invalid URL \"\": it is empty; give s3://bucket/key, gs://bucket/key or a path");
  if (text.find('\0') != std::string_view::npos) return Malformed(text, "it contains a NUL byte");

  size_t colon = text.find(':');
  size_t first_slash = text.find('/');
  bool has_scheme = colon != std::string_view::npos && colon > 0 &&
                    (first_slash == std::string_view::npos || colon < first_slash);
  std::string scheme = has_scheme ? AsciiToLower(text.substr(0, colon)) : "";
  std::string_view rest = has_scheme ? text.substr(colon + 1) : text;

  if (scheme == "file") return ParseFileUrl(text, rest);
  if (scheme == "s3" || scheme == "gs" || scheme == "mem") {
    if (!rest.starts_with("//")) return Malformed(text, "write " + scheme + "://bucket/key");
    rest.remove_prefix(2);
    size_t slash = rest.find('/');
    Url url;
    url.scheme = scheme;
    url.bucket = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) url.key = std::string(rest.substr(slash + 1));
    if (std::string why = CheckBucket(scheme, url.bucket); !why.empty()) return Malformed(text, why);
    if (scheme != "mem" && url.key.size() > kMaxObjectKeyBytes) {
      return Malformed(text, "object keys are at most 1024 bytes");
    }
    return url;
  }
  // Anything else that looks like "scheme://" is a scheme we do not know;
  // "name:thing" without "//" is an ordinary file name.
  if (has_scheme && rest.starts_with("//")) {
    return Malformed(text, "unknown scheme \"" + scheme + "\"; use s3://, gs://, file:// or a path");
  }
  return ParseLocal(text, text);
}

std::string JoinKey(std::string_view prefix, std::string_view name) {
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  if (prefix.empty()) return std::string(name);
  std::string out(prefix);
  out += '/';
  out += name;
  return out;
}

}  // namespace spool
