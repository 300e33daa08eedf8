#include "spool/s3/register.h"

#include "spool/core/storage/registry.h"
#include "spool/s3/s3_store.h"

namespace spool::s3 {

void Register() {
  RegisterStoreFactory("s3", [](const Url& url, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
    S3Options s3_options;
    s3_options.store = options;
    SPOOL_ASSIGN_OR_RETURN(std::shared_ptr<S3Store> store, S3Store::Open(url.bucket, s3_options));
    return std::shared_ptr<ObjectStore>(std::move(store));
  });
}

}  // namespace spool::s3
