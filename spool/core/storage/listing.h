// Walking listings: page by page, folder checks, and the one rule for what
// "list this name" shows, which `spool ls` and Python's spool.ls share.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool {

// The prefix that lists what the folder `key` holds: "" stays "" (the bucket
// or filesystem root); anything else ends with '/'.
std::string FolderPrefix(std::string_view key);

// Calls `visit` with each page of the listing, in order; stops at the first
// error, from the store or from `visit`.
Status ForEachPage(ObjectStore& store, ListOptions options, const std::function<Status(const ListPage&)>& visit);

// True when something is stored below `key` as a folder (an object, a
// subfolder or a folder marker under FolderPrefix(key)).
Result<bool> IsNonEmptyFolder(ObjectStore& store, std::string_view key);

// One entry of a listing as people see it: an object, or a folder. For a
// folder only `info.key` is set: its prefix, ending in '/'.
using ListedEntryVisitor = std::function<Status(const ObjectInfo& info, bool is_folder)>;

// What listing `key` shows (`spool ls`, spool.ls), in key order:
//  - "" or a key ending in '/': the folder's objects and subfolders, or with
//    `recursive` every object below it;
//  - another key names an object, a folder, or both (keys "t1" and "t1/x"):
//    an object alone lists as itself and a folder alone as "key/" does (so
//    "dir" and "dir/" list alike); when both exist, the object and then the
//    folder entry "key/" (with `recursive`, the object and then every object
//    below "key/"), as the AWS CLI shows them. "key/" lists the folder alone.
// Visits nothing when `key` names nothing (or an empty folder); the caller
// decides whether that is an error. Errors are the store's or `visit`'s.
Status ListNamed(ObjectStore& store, std::string_view key, bool recursive, const ListedEntryVisitor& visit);

}  // namespace spool
