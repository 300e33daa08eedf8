// The WritableObject of S3Store: a single PUT for objects up to one part,
// else a multipart upload with parts in flight in parallel under the byte
// budget. See s3_store.h for the contract.
//
// Part sizes: the configured size, else DefaultPartSize(expected_size); when
// the size is unknown, parts start at 8 MiB and double every 1,000 parts, so
// 10,000 parts hold over 8 TB (S3's object limit is 5 TiB).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "spool/core/executor.h"
#include "spool/core/storage/object_store.h"
#include "spool/s3/client.h"

namespace spool::s3 {

// Which create-only writes the server can do (If-None-Match: * honoured).
struct ConditionalCreateSupport {
  bool put = false;       // on a single PUT
  bool complete = false;  // on CompleteMultipartUpload
};

// A multipart upload to continue, or the hook that learns a new one's
// token (ObjectStore::OpenResumableUpload). The token is
// "s3-multipart/1 <part size> <upload id>": the part size, so that a writer
// cutting other parts does not reuse the upload.
struct S3ResumePlan {
  std::string upload_id;                  // empty: a new upload
  std::map<int, UploadedPart> parts;      // what ListParts said the upload holds
  std::function<void(const std::string&)> on_token;
};
std::string S3ResumeToken(uint64_t part_size, const std::string& upload_id);
// False for text that is not an S3ResumeToken.
bool ParseS3ResumeToken(std::string_view token, uint64_t* part_size, std::string* upload_id);

// `support` matters only for create-only writes: one that needs a multipart
// upload where `complete` is false fails with Unimplemented. With a plan
// naming an upload, each part whose number the upload holds with the same
// size is not sent again (its ETag is reused at CompleteMultipartUpload).
std::unique_ptr<WritableObject> MakeS3Writer(std::shared_ptr<S3Client> client, std::string key,
                                             const WriteOptions& options, ConditionalCreateSupport support,
                                             Executor& executor, ByteBudget& budget, S3ResumePlan resume = {});

// The size of part `index` (0-based) under the rules above.
uint64_t PartSizeFor(int index, uint64_t configured, std::optional<uint64_t> expected_size);

}  // namespace spool::s3
