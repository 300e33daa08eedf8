// Helpers shared by the local-file store, the transfer functions and the
// checkpoint source: errno to Status, what a special file is, a folder's
// fsync, and the names
// of the temporary files that writes and downloads go through before they
// are renamed into place.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "spool/core/status.h"

namespace spool {

// A Status for a failed system call on `path`: "<path>: <what>: <strerror>",
// with the code that fits errno (ENOENT -> NotFound, EACCES -> PermissionDenied,
// ENOSPC -> ResourceExhausted, ...).
Status ErrnoStatus(int error, std::string_view path, std::string_view what);

// What a file that is neither a regular file nor a folder is, from its
// st_mode: "a FIFO (named pipe)", "a socket", "a character device", "a block
// device", else "a special file".
std::string DescribeSpecialFile(mode_t mode);

// fsyncs a folder, so that a rename or create in it that has completed is
// durable (a file's own fsync does not cover its name). Errors name the folder.
Status SyncFolder(const std::string& folder);

// ".<name>.spool-tmp-<random>": hidden, in the same folder as the target,
// unique per call. Thread-safe.
std::string TemporaryNameFor(std::string_view file_name);

// True for names TemporaryNameFor makes (listings skip them).
bool IsTemporaryName(std::string_view file_name);

// The file name a temporary name was made for (shortened as TemporaryNameFor
// shortens it); `temporary_name` must satisfy IsTemporaryName.
std::string_view TargetOfTemporaryName(std::string_view temporary_name);

}  // namespace spool
