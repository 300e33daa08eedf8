#include "cli/commands/locations.h"

#include <filesystem>
#include <vector>

#include "cli/output.h"
#include "spool/core/storage/local_files.h"

namespace spool::cli {

Result<StoreLocation> Open(std::string_view url, const GlobalOptions& global) {
  return OpenLocation(url, global.ToStoreOptions());
}

bool IsLocal(const StoreLocation& location) { return location.url.scheme == "file"; }

std::string BaseName(std::string_view key) {
  while (key.ends_with('/')) key.remove_suffix(1);
  size_t slash = key.rfind('/');
  return std::string(slash == std::string_view::npos ? key : key.substr(slash + 1));
}

bool PassesThroughSymlink(const std::string& root, std::string_view relative) {
  std::filesystem::path at(root);
  size_t start = 0;
  for (size_t slash = relative.find('/'); slash != std::string_view::npos; slash = relative.find('/', start)) {
    at /= std::string(relative.substr(start, slash - start));
    std::error_code ignored;
    if (std::filesystem::is_symlink(at, ignored)) return true;
    start = slash + 1;
  }
  return false;
}

FolderMirror::FolderMirror(ObjectStore& source, std::string source_prefix, const StoreLocation& destination)
    : source_(source),
      source_prefix_(std::move(source_prefix)),
      destination_(destination),
      destination_prefix_(FolderPrefix(destination.key)) {}

Result<Placement> FolderMirror::Place(const ObjectInfo& info) {
  const std::string url = source_.Describe(info.key);
  const std::string_view relative = std::string_view(info.key).substr(source_prefix_.size());
  // The name as local paths read it: its segments without empty and "."
  // ones; the last segment says whether it names a folder ("images/").
  std::vector<std::string_view> segments;
  bool names_folder = false;
  for (size_t start = 0;;) {
    size_t end = std::min(relative.find('/', start), relative.size());
    std::string_view segment = relative.substr(start, end - start);
    if (segment == "..") {
      return InvalidArgumentError("refusing to copy " + url +
                                  ": its name has a '..' segment, which could climb out of the destination "
                                  "folder; rename the object, or copy it on its own to a name you choose");
    }
    names_folder = segment.empty() || segment == ".";
    if (!names_folder) segments.push_back(segment);
    if (end == relative.size()) break;
    start = end + 1;
  }

  Placement placement;
  if (!IsLocal(destination_)) {
    placement.relative = relative;  // object names are kept as they are
    placement.key = destination_prefix_ + placement.relative;
    return placement;
  }
  for (std::string_view segment : segments) {
    if (!placement.relative.empty()) placement.relative += '/';
    placement.relative += segment;
  }
  if (names_folder && info.size > 0) {
    return InvalidArgumentError("refusing to copy " + url + ": its name ends with '/', as a folder's, yet it holds " +
                                std::to_string(info.size) + " bytes, and no local file can have that name; copy it " +
                                "on its own to a file name (spool cp " + url + " FILE)");
  }
  if (placement.relative.empty()) return placement;  // the source folder's own marker
  placement.key = destination_prefix_ + placement.relative;
  placement.make_folder = names_folder;
  if (PassesThroughSymlink("/" + destination_prefix_, placement.relative)) {
    return InvalidArgumentError("refusing to copy " + url +
                                ": a folder on its way in the destination is a symbolic link");
  }
  if (!names_folder && placement.relative != relative) SPOOL_RETURN_IF_ERROR(ClaimChangedName(info, placement));
  return placement;
}

Status FolderMirror::ClaimChangedName(const ObjectInfo& info, const Placement& placement) {
  std::string other;
  if (auto taken = changed_names_.find(placement.relative); taken != changed_names_.end()) {
    other = taken->second;
  } else {
    Result<ObjectInfo> plain = source_.Stat(source_prefix_ + placement.relative);
    if (plain.ok()) {
      other = plain->key;
    } else if (plain.status().code() != StatusCode::kNotFound) {
      return plain.status();
    }
  }
  if (!other.empty()) {
    const std::string url = source_.Describe(info.key);
    return InvalidArgumentError("refusing to copy " + url + ": it would land on /" + placement.key +
                                ", the path of " + source_.Describe(other) +
                                "; copy it on its own to another name (spool cp " + url + " FILE)");
  }
  changed_names_.emplace(placement.relative, info.key);
  return OkStatus();
}

Status MakeLocalFolder(std::string_view key) {
  const std::string path = "/" + std::string(key);
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return ErrnoStatus(error.value(), path, "make the folder");
  return OkStatus();
}

void WarnSkipped(const ObjectStore& store, const ListPage& page, bool quiet) {
  if (quiet) return;
  for (const SkippedEntry& entry : page.skipped) {
    PrintWarning("skipping " + store.Describe(entry.key) + ": it is " + entry.what + ", not a regular file");
  }
}

}  // namespace spool::cli
