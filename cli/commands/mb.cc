// spool mb URL: creates a bucket (S3: in --region / AWS_REGION; GCS: in the
// project from --project or GOOGLE_CLOUD_PROJECT).
#include <cstdlib>
#include <memory>
#include <optional>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"
#include "spool/core/env.h"

namespace spool::cli {
namespace {

struct MbOptions {
  std::string url;
  std::string project;
};

// Creates the bucket through the backend that serves `location`; nullopt
// when no backend of this build makes buckets there (a local folder).
std::optional<Status> CreateBucket(const StoreLocation& location, const MbOptions& options) {
  BucketOptions bucket;
  bucket.project = options.project;
  if (bucket.project.empty() && location.url.scheme == "gs") {
    bucket.project = CurrentEnv().Get("GOOGLE_CLOUD_PROJECT").value_or("");
  }
  Status created = location.store->CreateBucket(bucket);
  if (created.code() == StatusCode::kUnimplemented) return std::nullopt;
  return created;
}

Status RunMb(const MbOptions& options, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(options.url, global));
  if (location.url.scheme != "s3" && location.url.scheme != "gs") {
    return InvalidArgumentError("spool mb creates s3:// and gs:// buckets; " + location.url.ToString() +
                                " is not one (make a local folder with mkdir)");
  }
  if (!location.key.empty()) {
    return InvalidArgumentError(location.url.ToString() + " names an object; give just the bucket, e.g. " +
                                location.url.scheme + "://" + location.url.bucket);
  }
  const std::string bucket = location.url.scheme + "://" + location.url.bucket;
  // Open() already refused a scheme whose backend this build lacks.
  const Status created = CreateBucket(location, options)
                             .value_or(UnimplementedError("spool mb: this build cannot create " + bucket));
  if (created.code() == StatusCode::kAlreadyExists) {
    return AlreadyExistsError(bucket + " exists already (yours or someone else's); pick another name");
  }
  SPOOL_RETURN_IF_ERROR(created);
  if (global.json) {
    PrintLine("{\"created\":" + JsonString(bucket) + "}");
  } else if (!global.quiet) {
    PrintLine("created " + bucket);
  }
  return OkStatus();
}

}  // namespace

Command AddMbCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<MbOptions>();
  CLI::App* app = spool.add_subcommand("mb", "Make a bucket");
  app->add_option("url", options->url, "s3://bucket or gs://bucket")->required();
  app->add_option("--project", options->project, "GCS project to create the bucket in (default: GOOGLE_CLOUD_PROJECT)");
  app->footer(
      "Examples:\n"
      "  spool mb s3://my-new-bucket --region eu-west-1\n"
      "  spool mb gs://my-new-bucket --project my-project\n");
  return {app, [options, &global] { return RunMb(*options, global); }};
}

}  // namespace spool::cli
