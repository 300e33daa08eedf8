#include "cli/commands/locations.h"

#include <filesystem>

#include "cli/output.h"

namespace spool::cli {

Result<StoreLocation> Open(std::string_view url, const GlobalOptions& global) {
  return OpenLocation(url, global.ToStoreOptions());
}

bool IsLocal(const StoreLocation& location) { return location.url.scheme == "file"; }

std::string FolderPrefix(std::string_view key) {
  std::string prefix(key);
  if (!prefix.empty() && !prefix.ends_with('/')) prefix.push_back('/');
  return prefix;
}

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

Status ForEachPage(ObjectStore& store, ListOptions options, const std::function<Status(const ListPage&)>& visit) {
  do {
    SPOOL_ASSIGN_OR_RETURN(ListPage page, store.List(options));
    SPOOL_RETURN_IF_ERROR(visit(page));
    options.page_token = page.next_page_token;
  } while (!options.page_token.empty());
  return OkStatus();
}

Result<bool> IsNonEmptyFolder(ObjectStore& store, std::string_view key) {
  ListOptions options;
  options.prefix = FolderPrefix(key);
  options.delimiter.push_back('/');  // not `= "/"`: GCC 12 misreports -Wrestrict on it here
  options.max_keys = 1;
  SPOOL_ASSIGN_OR_RETURN(ListPage page, store.List(options));
  return !page.objects.empty() || !page.common_prefixes.empty();
}

}  // namespace spool::cli
