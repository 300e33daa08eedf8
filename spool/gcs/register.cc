#include "spool/gcs/register.h"

namespace spool::gcs {

Result<GcsStoreOptions> GcsOptionsFromStoreOptions(const Url& url, const StoreOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(auto settings, SchemeSettings(options, "gs", {"anonymous"}));
  GcsStoreOptions gcs;
  gcs.bucket = url.bucket;
  gcs.endpoint = options.endpoint_url;
  gcs.http.ca_bundle = options.ca_bundle;
  gcs.executor = options.executor;
  gcs.budget = options.budget;
  gcs.retry = CountingRetry(options);
  gcs.counters = options.counters;
  if (auto anonymous = settings.find("anonymous"); anonymous != settings.end()) {
    SPOOL_ASSIGN_OR_RETURN(gcs.anonymous, ParseBoolSetting("gs.anonymous", anonymous->second));
  }
  return gcs;
}

void Register() {
  RegisterStoreFactory("gs", [](const Url& url, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
    SPOOL_ASSIGN_OR_RETURN(GcsStoreOptions gcs, GcsOptionsFromStoreOptions(url, options));
    SPOOL_ASSIGN_OR_RETURN(auto store, GcsStore::Open(std::move(gcs)));
    return std::shared_ptr<ObjectStore>(std::move(store));
  });
}

}  // namespace spool::gcs
