// spool gc-uploads URL [--older-than 24h] [--dry-run]
//
// Removes what killed writers left under a prefix: S3 multipart uploads that
// were never completed (their parts are stored, and billed, until aborted:
// what `aws s3api list-multipart-uploads` and `abort-multipart-upload` do by
// hand), and the temporary files of a local folder. GCS resumable sessions
// cannot be listed; the service drops them after a week.
#include <memory>
#include <string>

#include "cli/age.h"
#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"

namespace spool::cli {

namespace {

struct GcUploadsOptions {
  std::string url;
  std::string older_than = "24h";
  bool dry_run = false;
};

Status RunGcUploads(const GcUploadsOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(std::chrono::seconds age, ParseAge("--older-than", options.older_than));
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(options.url, global));
  ObjectStore& store = *location.store;
  SPOOL_ASSIGN_OR_RETURN(std::vector<IncompleteUpload> uploads,
                         AbortIncompleteUploads(store, location.key, age, options.dry_run));
  const char* verb = options.dry_run ? "would abort" : "aborted";
  for (const IncompleteUpload& upload : uploads) {
    if (global.json) {
      PrintLine("{\"" + std::string(options.dry_run ? "would_abort" : "aborted") + "\":" +
                JsonString(store.Describe(upload.key)) + ",\"upload_id\":" + JsonString(upload.id) +
                ",\"started\":" + JsonString(FormatTimestamp(upload.started)) + "}");
    } else if (!global.quiet) {
      PrintLine(std::string(verb) + " the upload of " + store.Describe(upload.key) + " started " +
                FormatTimestamp(upload.started) + " (" + upload.id + ")");
    }
  }
  if (!global.json && !global.quiet) {
    PrintLine(std::string(verb) + " " + std::to_string(uploads.size()) + " incomplete upload" +
              (uploads.size() == 1 ? "" : "s") + " older than " + options.older_than + " under " +
              store.Describe(location.key));
  }
  return OkStatus();
}

}  // namespace

Command AddGcUploadsCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<GcUploadsOptions>();
  CLI::App* app = spool.add_subcommand(
      "gc-uploads", "Abort the incomplete uploads killed writers left under a prefix (S3 multipart, local temporary files)");
  app->add_option("url", options->url, "The bucket or prefix, e.g. s3://my-bucket/run-7/")->required();
  app->add_option("--older-than", options->older_than,
                  "Only uploads started this long ago: 90s, 15m, 1h, 7d (default 24h, so running writers are left alone)");
  app->add_flag("--dry-run", options->dry_run, "List what would be aborted; change nothing");
  app->footer("Example: spool gc-uploads s3://my-bucket/ --older-than 7d --dry-run\n");
  return {app, [options, &global] { return RunGcUploads(*options, global); }};
}

}  // namespace spool::cli
