#include "cli/commands/object_checksum.h"

#include <algorithm>
#include <memory>
#include <string>

#include "spool/core/crc32c.h"
#include "spool/core/storage/transfer.h"

namespace spool::cli {

Result<uint32_t> ComputeCrc32c(ObjectStore& store, std::string_view key) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> object, store.OpenRead(key));
  const uint64_t size = object->info().size;
  std::string buffer(std::min<uint64_t>(16 << 20, size), '\0');
  uint32_t crc = 0;
  for (uint64_t offset = 0; offset < size;) {
    SPOOL_ASSIGN_OR_RETURN(size_t n, ReadParallel(*object, offset, buffer));
    if (n == 0) return DataLossError(store.Describe(key) + " ended at byte " + std::to_string(offset) + " before its size");
    crc = crc32c::Extend(crc, buffer.data(), n);
    offset += n;
  }
  return crc;
}

Result<uint32_t> Crc32cOf(ObjectStore& store, const ObjectInfo& info) {
  if (info.crc32c) return *info.crc32c;
  return ComputeCrc32c(store, info.key);
}

}  // namespace spool::cli
