// MemoryStore: objects held in this process's memory, for tests and
// examples ("mem://bucket/key").
//
// Buckets live in one process-wide table, so every MemoryStore (and every
// OpenLocation) of the same bucket sees the same objects; a bucket is created
// on first use. Versions are counters; an object replaced or deleted after
// OpenRead makes ReadAt of the older handle fail with FailedPrecondition.
// crc32c is computed at Close and kept. Conditional create is honoured.
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "spool/core/storage/object_store.h"

namespace spool {

class MemoryStore : public ObjectStore {
 public:
  // Binds to `bucket`, creating it (empty) if it does not exist yet.
  explicit MemoryStore(std::string bucket);
  ~MemoryStore() override;

  // Removes every object of `bucket` (for tests that reuse a bucket name).
  static void ClearBucket(std::string_view bucket);

  std::string Describe(std::string_view key) const override;
  Result<ObjectInfo> Stat(std::string_view key) override;
  Result<ListPage> List(const ListOptions& options) override;
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override;
  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key,
                                                    const WriteOptions& options = {}) override;
  Status Delete(std::string_view key) override;
  Result<ObjectInfo> Copy(std::string_view from_key, std::string_view to_key) override;

  struct Bucket;  // shared by every store and handle of one bucket

 private:
  std::string name_;
  std::shared_ptr<Bucket> bucket_;
};

}  // namespace spool
