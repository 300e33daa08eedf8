// spool stat URL
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"
#include "spool/core/bytes.h"
#include "spool/core/crc32c.h"
#include "spool/core/storage/verify.h"

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
    PrintLine(ObjectJson(described, *info, /*verified_by=*/true));
    return OkStatus();
  }
  PrintLine("url:      " + described);
  PrintLine("size:     " + std::to_string(info->size) + " (" + FormatBytes(info->size) + ")");
  PrintLine("updated:  " + FormatTimestamp(info->updated));
  PrintLine("version:  " + info->version);
  if (info->crc32c) {
    PrintLine("crc32c:   " + crc32c::ToBase64(*info->crc32c) +
              (info->crc32c_from_uploader ? "  (stored by spool's uploader)" : "  (kept by the store)"));
  } else {
    PrintLine("crc32c:   none");
  }
  if (info->digest) {
    std::string label = std::string(DigestName(info->digest->algorithm)) + ":";
    label.resize(std::max<size_t>(label.size() + 1, 10), ' ');
    PrintLine(label + info->digest->base64 + "  (" + DescribeSource(*info->digest) + ")");
  }
  // What a whole read (cp, cat, a reader) is checked against.
  if (std::optional<StoredDigest> checksum = ReadChecksum(*info)) {
    PrintLine("verified by: " + DescribeChecksum(*checksum));
  } else {
    PrintLine("verified by: nothing: the store keeps no checksum of this object, so whole reads of it cannot be "
              "verified (docs/integrity.md)");
  }
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
