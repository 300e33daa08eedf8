// What the object subcommands share: opening a URL with the global flags,
// folder prefixes, and walking a listing page by page.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "cli/global_options.h"
#include "spool/core/storage/registry.h"

namespace spool::cli {

Result<StoreLocation> Open(std::string_view url, const GlobalOptions& global);

bool IsLocal(const StoreLocation& location);

// The prefix that lists what the folder `key` holds: "" stays "" (the bucket
// or filesystem root); anything else ends with '/'.
std::string FolderPrefix(std::string_view key);

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

// Calls `visit` with each page of the listing, in order.
Status ForEachPage(ObjectStore& store, ListOptions options, const std::function<Status(const ListPage&)>& visit);

// True when something is stored below `key` as a folder.
Result<bool> IsNonEmptyFolder(ObjectStore& store, std::string_view key);

}  // namespace spool::cli
