#include "cli/convert/text_lines.h"

#include "spool/core/storage/transfer.h"

namespace spool::cli {

Result<std::unique_ptr<TextLines>> TextLines::Open(ObjectStore& store, std::string_view key) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> object, store.OpenRead(key));
  return std::unique_ptr<TextLines>(new TextLines(std::move(object), store.Describe(key)));
}

Status TextLines::Refill() {
  buffer_.erase(0, position_);
  position_ = 0;
  size_t kept = buffer_.size();
  uint64_t left = object_->info().size - offset_;
  buffer_.resize(kept + std::min<uint64_t>(kChunk, left));
  SPOOL_ASSIGN_OR_RETURN(size_t n, ReadParallel(*object_, offset_, std::span<char>(buffer_).subspan(kept)));
  buffer_.resize(kept + n);
  offset_ += n;
  return OkStatus();
}

Result<bool> TextLines::Next(std::string* line) {
  size_t newline;
  while ((newline = buffer_.find('\n', position_)) == std::string::npos) {
    if (offset_ >= object_->info().size) {
      if (position_ >= buffer_.size()) return false;
      newline = buffer_.size();  // a last line without '\n'
      break;
    }
    SPOOL_RETURN_IF_ERROR(Refill());
  }
  line->assign(buffer_, position_, newline - position_);
  if (!line->empty() && line->back() == '\r') line->pop_back();
  // A UTF-8 byte-order mark (Excel's "CSV UTF-8", Notepad) is not text.
  if (line_number_ == 0 && line->starts_with(kUtf8Bom)) line->erase(0, kUtf8Bom.size());
  position_ = std::min(newline + 1, buffer_.size());
  ++line_number_;
  return true;
}

}  // namespace spool::cli
