// The WritableObject of S3Store: a single PUT for objects up to one part,
// else a multipart upload with parts in flight in parallel under the byte
// budget. See s3_store.h for the contract.
//
// Part sizes: the configured size, else DefaultPartSize(expected_size); when
// the size is unknown, parts start at 8 MiB and double every 1,000 parts, so
// 10,000 parts hold over 8 TB (S3's object limit is 5 TiB).
#pragma once

#include <memory>

#include "spool/core/executor.h"
#include "spool/core/storage/object_store.h"
#include "spool/s3/client.h"

namespace spool::s3 {

// Which create-only writes the server can do (If-None-Match: * honoured).
struct ConditionalCreateSupport {
  bool put = false;       // on a single PUT
  bool complete = false;  // on CompleteMultipartUpload
};

// `support` matters only for create-only writes: one that needs a multipart
// upload where `complete` is false fails with Unimplemented.
std::unique_ptr<WritableObject> MakeS3Writer(std::shared_ptr<S3Client> client, std::string key,
                                             const WriteOptions& options, ConditionalCreateSupport support,
                                             Executor& executor, ByteBudget& budget);

// The size of part `index` (0-based) under the rules above.
uint64_t PartSizeFor(int index, uint64_t configured, std::optional<uint64_t> expected_size);

}  // namespace spool::s3
