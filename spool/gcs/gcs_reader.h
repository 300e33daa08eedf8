// The ReadableObject of GcsStore: one object generation, read with ranged
// downloads (a large ReadAt is split by core/storage/ranged_reads.h).
// Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <span>

#include "spool/core/executor.h"
#include "spool/core/storage/object_store.h"
#include "spool/core/storage/ranged_reads.h"
#include "spool/gcs/client.h"

namespace spool::gcs {

struct ReaderOptions {
  RangedReads reads;
  Executor* executor = nullptr;  // default: DefaultExecutor()
};

class GcsReader : public ReadableObject {
 public:
  GcsReader(std::shared_ptr<GcsClient> client, ObjectMetadata object, ObjectInfo info, ReaderOptions options);

  const ObjectInfo& info() const override { return info_; }
  // Ranges are pinned to the generation seen at open (FailedPrecondition
  // once it is replaced); with generation 0 in `object`, to its size
  // (ReadObjectRequest::object_size) and then to the generation of the
  // first answer. A ReadAt that covers the whole object is checked
  // against its CRC32C (else its md5Hash): DataLoss on a mismatch.
  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override;
  bool verifies_whole_reads() const override { return true; }
  RangedReads ranged_reads() const override { return options_.reads; }

 private:
  Status ReadRange(uint64_t offset, std::span<char> out, std::optional<uint32_t>* whole_crc) const;

  std::shared_ptr<GcsClient> client_;
  ObjectMetadata object_;
  ObjectInfo info_;
  ReaderOptions options_;
  // Opened at generation 0 (from a size alone): the first answer's, which
  // pins the reads after it; 0 until then.
  mutable std::atomic<int64_t> learned_generation_{0};
};

}  // namespace spool::gcs
