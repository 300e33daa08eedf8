// The ReadableObject of S3Store: parallel ranged GETs pinned to one ETag.
// See s3_store.h for the contract.
#pragma once

#include <memory>

#include "spool/core/executor.h"
#include "spool/core/storage/object_store.h"
#include "spool/s3/client.h"

namespace spool::s3 {

std::unique_ptr<ReadableObject> MakeS3Reader(std::shared_ptr<S3Client> client, ObjectInfo info, Executor& executor);

}  // namespace spool::s3
