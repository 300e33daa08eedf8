// spool ls [-r] [-l] [-h] URL
//
// What URL names, by ListNamed's rule (spool/core/storage/listing.h): a
// folder's contents; an object; or, for a name that is both (keys "t1" and
// "t1/x"), the object and the folder entry "t1/".
#include <cstdio>
#include <memory>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"

namespace spool::cli {

namespace {

struct LsOptions {
  std::string url;
  bool recursive = false;
  bool long_format = false;
  bool human = false;
};

class LsPrinter {
 public:
  LsPrinter(const LsOptions& options, const GlobalOptions& global, ObjectStore& store)
      : options_(options), global_(global), store_(store) {}

  void Object(const ObjectInfo& info) {
    std::string url = store_.Describe(info.key);
    if (global_.json) {
      PrintLine(ObjectJson(url, info));
    } else if (options_.long_format) {
      char line[64];
      std::snprintf(line, sizeof(line), "%12s  %s  ", FormatSize(info.size, options_.human).c_str(),
                    FormatTimestamp(info.updated).c_str());
      PrintLine(std::string(line) + url);
    } else {
      PrintLine(url);
    }
    ++shown_;
  }

  void Folder(const std::string& prefix) {
    std::string url = store_.Describe(prefix);
    if (global_.json) {
      PrintLine("{\"url\":" + JsonString(url) + ",\"prefix\":" + JsonString(prefix) + ",\"folder\":true}");
    } else if (options_.long_format) {
      char line[64];
      std::snprintf(line, sizeof(line), "%12s  %20s  ", "DIR", "");
      PrintLine(std::string(line) + url);
    } else {
      PrintLine(url);
    }
    ++shown_;
  }

  size_t shown() const { return shown_; }

 private:
  const LsOptions& options_;
  const GlobalOptions& global_;
  ObjectStore& store_;
  size_t shown_ = 0;
};

Status RunLs(const LsOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(options.url, global));
  ObjectStore& store = *location.store;
  LsPrinter printer(options, global, store);
  // The rule spool.ls shares: an object and a folder of one name both show.
  auto show = [&printer](const ObjectInfo& info, bool is_folder) {
    if (is_folder) {
      printer.Folder(info.key);
    } else {
      printer.Object(info);
    }
    return OkStatus();
  };
  SPOOL_RETURN_IF_ERROR(ListNamed(store, location.key, options.recursive, show));
  if (printer.shown() == 0 && !location.key.empty()) {
    return NotFoundError(store.Describe(location.key) + ": no such object or folder");
  }
  return OkStatus();
}

}  // namespace

Command AddLsCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<LsOptions>();
  CLI::App* app = spool.add_subcommand("ls", "List the objects and folders under a URL");
  app->set_help_flag("--help", "Print this help and exit");
  app->add_option("url", options->url, "s3://bucket/prefix, gs://bucket/prefix, file:///path or a local path")
      ->required();
  app->add_flag("-r,--recursive", options->recursive, "List every object below the URL, not one level");
  app->add_flag("-l,--long", options->long_format, "Show each object's size and modification time");
  app->add_flag("-h,--human-readable", options->human, "With -l, sizes as 1.5 GiB instead of bytes");
  app->footer("Example: spool ls -l -h s3://my-bucket/datasets/\n");
  return {app, [options, &global] { return RunLs(*options, global); }};
}

}  // namespace spool::cli
