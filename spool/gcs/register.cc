#include "spool/gcs/register.h"

#include "spool/core/storage/registry.h"
#include "spool/gcs/gcs_store.h"

namespace spool::gcs {

void Register() {
  RegisterStoreFactory("gs", [](const Url& url, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
    GcsStoreOptions gcs;
    gcs.bucket = url.bucket;
    gcs.endpoint = options.endpoint_url;
    gcs.anonymous = options.anonymous;
    gcs.http.ca_bundle = options.ca_bundle;
    gcs.executor = options.executor;
    gcs.budget = options.budget;
    SPOOL_ASSIGN_OR_RETURN(auto store, GcsStore::Open(std::move(gcs)));
    return std::shared_ptr<ObjectStore>(std::move(store));
  });
}

}  // namespace spool::gcs
