// spool rm [-r] URL
#include <algorithm>
#include <filesystem>
#include <memory>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"

namespace spool::cli {

namespace {

struct RmOptions {
  std::string url;
  bool recursive = false;
};

void ReportDeleted(const GlobalOptions& global, const std::string& url) {
  if (global.json) {
    PrintLine("{\"deleted\":" + JsonString(url) + "}");
  } else if (!global.quiet) {
    PrintLine("deleted " + url);
  }
}

// A local folder emptied by rm -r goes too, as its files did: object stores
// have no folders to leave behind. Only empty folders are removed.
void RemoveEmptyLocalFolders(const std::string& folder) {
  std::error_code error;
  std::vector<std::filesystem::path> folders;
  for (std::filesystem::recursive_directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (it->is_directory(error) && !it->is_symlink(error)) folders.push_back(it->path());
  }
  // Deepest first, so a parent is empty by the time its turn comes.
  std::sort(folders.begin(), folders.end(),
            [](const auto& a, const auto& b) { return a.native().size() > b.native().size(); });
  folders.push_back(folder);
  for (const auto& path : folders) std::filesystem::remove(path, error);  // fails harmlessly when not empty
}

Status RemoveOne(ObjectStore& store, const std::string& key, const GlobalOptions& global) {
  if (key.empty() || key.ends_with('/')) {
    return InvalidArgumentError(store.Describe(key) + " names a folder; remove it with spool rm -r");
  }
  Result<ObjectInfo> info = store.Stat(key);
  if (!info.ok()) {
    if (info.status().code() == StatusCode::kNotFound && IsNonEmptyFolder(store, key).value_or(false)) {
      return InvalidArgumentError(store.Describe(key) + " is a folder; remove it with spool rm -r");
    }
    return info.status();
  }
  SPOOL_RETURN_IF_ERROR(store.Delete(key));
  ReportDeleted(global, store.Describe(key));
  return OkStatus();
}

Status RemoveRecursively(const StoreLocation& location, const GlobalOptions& global) {
  ObjectStore& store = *location.store;
  if (IsLocal(location) && location.key.empty()) {
    return InvalidArgumentError("refusing to remove everything under / recursively");
  }
  size_t deleted = 0;
  size_t failed = 0;
  Status first_failure;
  if (!location.key.empty() && !location.key.ends_with('/') && store.Stat(location.key).ok()) {
    SPOOL_RETURN_IF_ERROR(store.Delete(location.key));
    ReportDeleted(global, store.Describe(location.key));
    ++deleted;
  }
  ListOptions list;
  list.prefix = FolderPrefix(location.key);
  SPOOL_RETURN_IF_ERROR(ForEachPage(store, list, [&](const ListPage& page) -> Status {
    std::vector<std::string> keys;
    for (const ObjectInfo& info : page.objects) keys.push_back(info.key);
    if (keys.empty()) return OkStatus();
    SPOOL_ASSIGN_OR_RETURN(std::vector<DeleteFailure> failures, store.DeleteMany(keys));
    for (const DeleteFailure& failure : failures) {
      PrintError(failure.status);
      if (failed++ == 0) first_failure = failure.status;
      keys.erase(std::remove(keys.begin(), keys.end(), failure.key), keys.end());
    }
    for (const std::string& key : keys) ReportDeleted(global, store.Describe(key));
    deleted += keys.size();
    return OkStatus();
  }));
  if (IsLocal(location)) RemoveEmptyLocalFolders("/" + location.key);
  if (failed > 0) {
    return Status(first_failure.code(), std::to_string(failed) + " of " + std::to_string(failed + deleted) +
                                            " objects under " + store.Describe(location.key) + " could not be deleted");
  }
  if (deleted == 0) return NotFoundError(store.Describe(location.key) + ": no such object or folder");
  return OkStatus();
}

Status RunRm(const RmOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(options.url, global));
  if (options.recursive) return RemoveRecursively(location, global);
  return RemoveOne(*location.store, location.key, global);
}

}  // namespace

Command AddRmCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<RmOptions>();
  CLI::App* app = spool.add_subcommand("rm", "Delete an object, or with -r everything under a folder");
  app->add_option("url", options->url, "The object's or folder's URL or path")->required();
  app->add_flag("-r,--recursive", options->recursive, "Delete every object under the URL");
  app->footer("Example: spool rm -r s3://my-bucket/tmp/run-42/\n");
  return {app, [options, &global] { return RunRm(*options, global); }};
}

}  // namespace spool::cli
