#include "spool/core/storage/explained_reads.h"

namespace spool {

bool IsChangedSinceOpened(const Status& read) {
  const int http_status = read.remote().http_status;
  return read.code() == StatusCode::kFailedPrecondition &&
         (http_status == 0 || http_status == 412 || http_status == 416);
}

Result<size_t> ExplainedReads::ReadAt(uint64_t offset, std::span<char> buffer) {
  Result<size_t> read = object_->ReadAt(offset, buffer);
  if (read.ok()) return read;
  return explain_(read.status());
}

}  // namespace spool
