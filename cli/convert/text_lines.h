// TextLines: the lines of a text object on any store, read sequentially in
// large chunks (so a CSV in a bucket streams without being downloaded
// whole). Line endings "\n" and "\r\n" are removed, and so is a UTF-8
// byte-order mark at the start of the first line (as Python's "utf-8-sig"
// and pandas do). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool::cli {

class TextLines {
 public:
  static Result<std::unique_ptr<TextLines>> Open(ObjectStore& store, std::string_view key);

  // The next line into `*line`: true, or false at the end.
  Result<bool> Next(std::string* line);
  // 1-based number of the line Next() returned last.
  uint64_t line_number() const { return line_number_; }
  const std::string& url() const { return url_; }

 private:
  TextLines(std::unique_ptr<ReadableObject> object, std::string url)
      : object_(std::move(object)), url_(std::move(url)) {}
  Status Refill();

  static constexpr size_t kChunk = 4 << 20;
  static constexpr std::string_view kUtf8Bom = "\xef\xbb\xbf";
  std::unique_ptr<ReadableObject> object_;
  std::string url_;
  std::string buffer_;
  size_t position_ = 0;  // next unread byte of buffer_
  uint64_t offset_ = 0;  // object offset just past buffer_
  uint64_t line_number_ = 0;
};

}  // namespace spool::cli
