// HttpHeaders (case-insensitive, order-keeping) and BufferSink.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <system_error>

#include "spool/core/http/transport.h"
#include "spool/core/strings.h"

namespace spool {

void HttpHeaders::Add(std::string name, std::string value) {
  entries_.emplace_back(std::move(name), std::move(value));
}

void HttpHeaders::Set(std::string name, std::string value) {
  std::erase_if(entries_, [&](const auto& entry) { return EqualsIgnoreCase(entry.first, name); });
  Add(std::move(name), std::move(value));
}

std::optional<std::string> HttpHeaders::Get(std::string_view name) const {
  for (const auto& [key, value] : entries_) {
    if (EqualsIgnoreCase(key, name)) return value;
  }
  return std::nullopt;
}

std::optional<uint64_t> ContentRangeTotal(const HttpHeaders& headers) {
  const std::string range = headers.Get("Content-Range").value_or("");
  const size_t slash = range.rfind('/');
  if (slash == std::string::npos || slash + 1 >= range.size()) return std::nullopt;
  uint64_t total = 0;
  const char* end = range.data() + range.size();
  const std::from_chars_result parsed = std::from_chars(range.data() + slash + 1, end, total);
  if (parsed.ec != std::errc() || parsed.ptr != end) return std::nullopt;
  return total;
}

Status BufferSink::Write(std::string_view data) {
  if (data.size() > buffer_.size() - size_) {
    return OutOfRangeError("response body is longer than the " + std::to_string(buffer_.size()) +
                           "-byte buffer given for it (" + std::to_string(size_ + data.size()) +
                           " bytes so far); request a smaller range or pass a larger buffer");
  }
  std::memcpy(buffer_.data() + size_, data.data(), data.size());
  size_ += data.size();
  return OkStatus();
}

}  // namespace spool
