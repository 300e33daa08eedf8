#include "cli/commands/locations.h"

#include <filesystem>

#include "cli/output.h"

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

bool IsSafeRelativeKey(std::string_view relative) {
  if (relative.empty() || relative.front() == '/') return false;
  size_t start = 0;
  while (start <= relative.size()) {
    size_t end = std::min(relative.find('/', start), relative.size());
    std::string_view segment = relative.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    start = end + 1;
  }
  return true;
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

void WarnSkipped(const ObjectStore& store, const ListPage& page, bool quiet) {
  if (quiet) return;
  for (const SkippedEntry& entry : page.skipped) {
    PrintWarning("skipping " + store.Describe(entry.key) + ": it is " + entry.what + ", not a regular file");
  }
}

}  // namespace spool::cli
