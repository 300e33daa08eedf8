#include "spool/core/storage/listing.h"

namespace spool {

std::string FolderPrefix(std::string_view key) {
  std::string prefix(key);
  if (!prefix.empty() && !prefix.ends_with('/')) prefix.push_back('/');
  return prefix;
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

namespace {

ObjectInfo FolderEntry(std::string prefix) {
  ObjectInfo folder;
  folder.key = std::move(prefix);
  return folder;
}

// Visits the objects and folders of one page merged back into key order.
Status VisitInKeyOrder(const ListPage& page, const ListedEntryVisitor& visit) {
  size_t folder = 0;
  for (const ObjectInfo& info : page.objects) {
    while (folder < page.common_prefixes.size() && page.common_prefixes[folder] < info.key) {
      SPOOL_RETURN_IF_ERROR(visit(FolderEntry(page.common_prefixes[folder++]), true));
    }
    SPOOL_RETURN_IF_ERROR(visit(info, false));
  }
  while (folder < page.common_prefixes.size()) {
    SPOOL_RETURN_IF_ERROR(visit(FolderEntry(page.common_prefixes[folder++]), true));
  }
  return OkStatus();
}

}  // namespace

Status ListNamed(ObjectStore& store, std::string_view key, bool recursive, const ListedEntryVisitor& visit) {
  ListOptions list;
  list.prefix = FolderPrefix(key);
  if (!recursive) list.delimiter = "/";
  if (!key.empty() && !key.ends_with('/')) {
    Result<ObjectInfo> object = store.Stat(key);
    if (!object.ok() && object.status().code() != StatusCode::kNotFound) return object.status();
    if (object.ok()) {
      SPOOL_RETURN_IF_ERROR(visit(*object, false));
      SPOOL_ASSIGN_OR_RETURN(bool also_a_folder, IsNonEmptyFolder(store, key));
      if (!also_a_folder) return OkStatus();
      if (!recursive) return visit(FolderEntry(list.prefix), true);
    }
  }
  return ForEachPage(store, list, [&visit](const ListPage& page) { return VisitInKeyOrder(page, visit); });
}

}  // namespace spool
