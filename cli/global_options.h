// Flags every spool subcommand accepts, and how they map to StoreOptions.
#pragma once

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

  StoreOptions ToStoreOptions() const {
    StoreOptions options;
    options.endpoint_url = endpoint_url;
    options.region = region;
    options.profile = profile;
    options.ca_bundle = ca_bundle;
    options.anonymous = no_sign_request;
    options.path_style = path_style;
    return options;
  }
};

}  // namespace spool::cli
