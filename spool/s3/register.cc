#include "spool/s3/register.h"

#include "spool/s3/s3_store.h"

namespace spool::s3 {

Result<S3Options> S3OptionsFromStoreOptions(const StoreOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(auto settings,
                         SchemeSettings(options, "s3", {"region", "profile", "path_style", "anonymous"}));
  S3Options s3_options;
  s3_options.endpoint_url = options.endpoint_url;
  s3_options.ca_bundle = options.ca_bundle;
  s3_options.executor = options.executor;
  s3_options.budget = options.budget;
  s3_options.counters = options.counters;
  s3_options.retry = CountingRetry(options);
  for (const auto& [name, value] : settings) {
    if (name == "region") s3_options.region = value;
    if (name == "profile") s3_options.profile = value;
    if (name == "path_style") {
      SPOOL_ASSIGN_OR_RETURN(bool path_style, ParseBoolSetting("s3.path_style", value));
      if (path_style) s3_options.addressing = AddressingStyle::kPath;
    }
    if (name == "anonymous") {
      SPOOL_ASSIGN_OR_RETURN(s3_options.anonymous, ParseBoolSetting("s3.anonymous", value));
    }
  }
  return s3_options;
}

void Register() {
  RegisterStoreFactory("s3", [](const Url& url, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
    SPOOL_ASSIGN_OR_RETURN(S3Options s3_options, S3OptionsFromStoreOptions(options));
    SPOOL_ASSIGN_OR_RETURN(std::shared_ptr<S3Store> store, S3Store::Open(url.bucket, s3_options));
    return std::shared_ptr<ObjectStore>(std::move(store));
  });
}

}  // namespace spool::s3
