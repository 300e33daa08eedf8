// Flags every spool subcommand accepts, and how they map to StoreOptions.
#pragma once

#include <memory>
#include <string>

#include "spool/core/storage/registry.h"

namespace spool::cli {

struct GlobalOptions {
  std::string endpoint_url;
  std::string region;
  std::string profile;
  std::string ca_bundle;
  bool no_sign_request = false;
  bool path_style = false;
  bool quiet = false;  // no per-object progress lines
  bool json = false;   // machine-readable output (one JSON object per line)
  bool stats = false;  // --stats: what the requests did, on stderr at the end
  // Every store the command opens counts into these (what --stats and the
  // metrics exporter report).
  std::shared_ptr<RequestCounters> counters = std::make_shared<RequestCounters>();

  // The S3-only flags become "s3." settings; --no-sign-request applies to
  // every cloud scheme.
  StoreOptions ToStoreOptions() const {
    StoreOptions options;
    options.endpoint_url = endpoint_url;
    options.ca_bundle = ca_bundle;
    options.counters = counters;
    if (!region.empty()) options.settings["s3.region"] = region;
    if (!profile.empty()) options.settings["s3.profile"] = profile;
    if (path_style) options.settings["s3.path_style"] = "true";
    if (no_sign_request) {
      options.settings["s3.anonymous"] = "true";
      options.settings["gs.anonymous"] = "true";
    }
    return options;
  }
};

}  // namespace spool::cli
