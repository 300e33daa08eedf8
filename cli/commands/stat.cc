// spool stat URL
#include <memory>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"
#include "spool/core/bytes.h"
#include "spool/core/crc32c.h"

namespace spool::cli {

namespace {

Status RunStat(const std::string& url, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(url, global));
  ObjectStore& store = *location.store;
  Result<ObjectInfo> info = store.Stat(location.key);
  if (!info.ok()) {
    // Folders are prefixes, not objects: say so rather than "not found".
    if (info.status().code() == StatusCode::kNotFound && IsNonEmptyFolder(store, location.key).value_or(false)) {
      return NotFoundError(store.Describe(location.key) + " is a folder, not an object; list it with spool ls");
    }
    return info.status();
  }
  const std::string described = store.Describe(info->key);
  if (global.json) {
    PrintLine(ObjectJson(described, *info));
    return OkStatus();
  }
  PrintLine("url:      " + described);
  PrintLine("size:     " + std::to_string(info->size) + " (" + FormatBytes(info->size) + ")");
  PrintLine("updated:  " + FormatTimestamp(info->updated));
  PrintLine("version:  " + info->version);
  if (info->crc32c) {
    PrintLine("crc32c:   " + crc32c::ToBase64(*info->crc32c) +
              (info->crc32c_from_uploader ? "  (stored by spool's uploader; reads are verified against it)"
                                          : "  (kept by the store; reads are verified against it)"));
  } else {
    PrintLine("crc32c:   none: whole reads of this object cannot be verified (docs/integrity.md)");
  }
  if (!info->md5_base64.empty()) PrintLine("md5:      " + info->md5_base64);
  return OkStatus();
}

}  // namespace

Command AddStatCommand(CLI::App& spool, const GlobalOptions& global) {
  auto url = std::make_shared<std::string>();
  CLI::App* app = spool.add_subcommand("stat", "Show one object's size, time, version and checksums");
  app->add_option("url", *url, "The object's URL or path")->required();
  app->footer("Example: spool stat gs://my-bucket/shards/train-00000-of-00016\n");
  return {app, [url, &global] { return RunStat(*url, global); }};
}

}  // namespace spool::cli
