// Helpers shared by the local-file store, the transfer functions and the
// checkpoint source: errno to Status, what a special file is, writing a
// file in pieces, a folder's fsync, and the names
// of the temporary files that writes and downloads go through before they
// are renamed into place.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
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

// The largest piece WriteToFile hands the kernel in one call. Larger
// writes make the page cache allocate large folios (2 MiB and up); on a
// virtual machine whose free memory the host has taken back (free page
// reporting), each such folio is faulted in by the host on first touch:
// 1 GiB written in 16 MiB calls cost 1.9-2.9 s of system time, in 1 MiB
// calls 0.21-0.26 s (docs/performance.md, "Downloads to disk").
inline constexpr size_t kFileWritePiece = 1 << 20;

// Writes all of `data` to `fd`: at `offset` (pwrite) when given, else at the
// file position; in pieces of at most kFileWritePiece, retrying short writes
// and EINTR. Errors name `path`. Thread-safe for distinct ranges of one file
// when offsets are given.
Status WriteToFile(int fd, std::span<const char> data, std::optional<uint64_t> offset, std::string_view path);

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
