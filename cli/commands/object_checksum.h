// The CRC32C of an object's stored bytes: the one the store keeps when it
// keeps one (S3 full-object checksums, GCS), else computed by reading it.
#pragma once

#include <cstdint>
#include <string_view>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool::cli {

// Reads the whole object (parallel ranged reads) and returns its CRC32C.
Result<uint32_t> ComputeCrc32c(ObjectStore& store, std::string_view key);

// info.crc32c when set, else ComputeCrc32c.
Result<uint32_t> Crc32cOf(ObjectStore& store, const ObjectInfo& info);

}  // namespace spool::cli
