// What the object subcommands share: opening a URL with the global flags,
// and checking the names a folder copy writes. Listing helpers
// (FolderPrefix, ForEachPage, IsNonEmptyFolder, ListNamed) are the
// library's: spool/core/storage/listing.h.
#pragma once

#include <string>
#include <string_view>

#include "cli/global_options.h"
#include "spool/core/storage/listing.h"
#include "spool/core/storage/registry.h"

namespace spool::cli {

Result<StoreLocation> Open(std::string_view url, const GlobalOptions& global);

bool IsLocal(const StoreLocation& location);

// The last '/'-separated part of `key`.
std::string BaseName(std::string_view key);

// A name below a folder that stays inside it: not absolute, and no empty,
// "." or ".." segments. Keys that fail this are never copied to a path.
bool IsSafeRelativeKey(std::string_view relative);

// Whether writing `relative` (a safe relative key) below the local folder
// `root` would go through a folder that is a symbolic link, and so possibly
// land outside `root`. Such writes are refused.
bool PassesThroughSymlink(const std::string& root, std::string_view relative);

// Says on stderr, unless `quiet`, which entries of a source folder's listing
// page are left out because they are not files (ListPage::skipped: FIFOs,
// sockets, devices, links to nothing), one warning each.
void WarnSkipped(const ObjectStore& store, const ListPage& page, bool quiet);

}  // namespace spool::cli
