// What the object subcommands share: opening a URL with the global flags,
// and where the objects of a folder land when it is mirrored into another.
// Listing helpers (FolderPrefix, ForEachPage, IsNonEmptyFolder, ListNamed)
// are the library's: spool/core/storage/listing.h.
#pragma once

#include <map>
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

// Whether writing `relative` (a name without empty, "." or ".." segments)
// below the local folder `root` would go through a folder that is a
// symbolic link, and so possibly land outside `root`. Such writes are
// refused.
bool PassesThroughSymlink(const std::string& root, std::string_view relative);

// Where one object of a source folder lands below the destination folder.
struct Placement {
  // Its name below the destination folder; empty for the source folder's
  // own marker (the key "dir/" itself), which is left out: nothing to do.
  std::string relative;
  // The destination key: FolderPrefix(destination) + relative.
  std::string key;
  // A folder marker (a zero-byte key ending in '/', what the S3 console's
  // "Create folder" and many tools make) bound for local files: make the
  // folder `key` (MakeLocalFolder) instead of copying a file. Towards an
  // object store a marker is copied as the object it is.
  bool make_folder = false;
};

// Places the objects of one source folder below one destination folder, the
// rule of `cp -r` and `sync`:
//  - towards an object store, a name stays as it is ("a//b" stays "a//b");
//  - towards local files, empty and "." segments are dropped, as paths drop
//    them: "a//b" and "a/./b" land at "a/b", "/x" at "x" (what the AWS CLI
//    writes); a folder marker becomes a folder.
// Refused, with InvalidArgument naming the object and why: a name with a
// ".." segment (it could climb out of the destination, and HTTP clients
// resolve such paths); towards local files, a key ending in '/' that holds
// bytes (no file can have that name), a name that would pass through a
// symbolic link in the destination, and a changed name that lands on the
// path of another object of the folder ("a//b" beside "a/b": the object
// whose name needs no change keeps the path). Not thread-safe.
class FolderMirror {
 public:
  // `source_prefix` is the source folder's listing prefix (FolderPrefix);
  // the store and the destination outlive the mirror.
  FolderMirror(ObjectStore& source, std::string source_prefix, const StoreLocation& destination);

  // Where `info`, an object listed under the source prefix, lands. A name
  // that changes on its way to local files costs a Stat of the plain name.
  Result<Placement> Place(const ObjectInfo& info);

 private:
  // Refuses `info` when the path its name changed into is another object's.
  Status ClaimChangedName(const ObjectInfo& info, const Placement& placement);

  ObjectStore& source_;
  const std::string source_prefix_;
  const StoreLocation& destination_;
  const std::string destination_prefix_;
  // Local paths taken by objects whose names changed on the way: path ->
  // the source key. Small: only odd names ("a//b") are kept, and a plain
  // name is never refused (a changed name checks for it with a Stat).
  std::map<std::string, std::string> changed_names_;
};

// Makes the local folder `key` (a local store's key) and its parents.
Status MakeLocalFolder(std::string_view key);

// Says on stderr, unless `quiet`, which entries of a source folder's listing
// page are left out because they are not files (ListPage::skipped: FIFOs,
// sockets, devices, links to nothing), one warning each.
void WarnSkipped(const ObjectStore& store, const ListPage& page, bool quiet);

}  // namespace spool::cli
