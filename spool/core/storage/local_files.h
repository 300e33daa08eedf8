// Helpers shared by the local-file store and the transfer functions: errno
// to Status, and the names of the temporary files that writes and downloads
// go through before they are renamed into place.
#pragma once

#include <string>
#include <string_view>

#include "spool/core/status.h"

namespace spool {

// A Status for a failed system call on `path`: "<path>: <what>: <strerror>",
// with the code that fits errno (ENOENT -> NotFound, EACCES -> PermissionDenied,
// ENOSPC -> ResourceExhausted, ...).
Status ErrnoStatus(int error, std::string_view path, std::string_view what);

// ".<name>.spool-tmp-<random>": hidden, in the same folder as the target,
// unique per call. Thread-safe.
std::string TemporaryNameFor(std::string_view file_name);

// True for names TemporaryNameFor makes (listings skip them).
bool IsTemporaryName(std::string_view file_name);

// The file name a temporary name was made for (shortened as TemporaryNameFor
// shortens it); `temporary_name` must satisfy IsTemporaryName.
std::string_view TargetOfTemporaryName(std::string_view temporary_name);

}  // namespace spool
