// The writer GcsStore::OpenResumableUpload returns for a session a killed
// process left: the caller appends the object from its first byte again;
// the bytes the session already holds are only checksummed (their CRC32C
// goes into the final x-goog-hash), and from there on the bytes go to a
// ResumableUpload continuing the session. Not thread-safe, like every
// WritableObject.
#pragma once

#include <memory>
#include <string>

#include "spool/core/storage/object_store.h"
#include "spool/gcs/gcs_store.h"

namespace spool::gcs {

// "gcs-session/1 <session URI>", and back ("" when `token` is not one).
std::string GcsResumeToken(const std::string& session_uri);
std::string SessionOfGcsResumeToken(std::string_view token);

// Continues `session_uri`, which holds `committed` bytes of `key`.
std::unique_ptr<WritableObject> MakeContinuedWriter(GcsStore& store, std::string key, std::string session_uri,
                                                    uint64_t committed);

}  // namespace spool::gcs
