// GcsStore's description of how it reaches Cloud Storage, its identity, and
// bucket creation: what the CLI shows and does through ObjectStore.
#include <string>

#include "spool/gcs/gcs_store.h"

namespace spool::gcs {

StoreAccess GcsStore::Access() const {
  StoreAccess access;
  access.kind = "GCS";
  access.endpoint = client_->options().endpoint;
  access.settings = DescribeAccess();
  return access;
}

Result<StoreIdentity> GcsStore::WhoAmI() {
  const auto& credentials = client_->options().credentials;
  SPOOL_ASSIGN_OR_RETURN(std::string header, credentials->AuthorizationHeader());
  StoreIdentity identity;
  identity.identity = header.empty() ? "anonymous" : "an OAuth2 access token";
  identity.source = credentials->Describe();
  return identity;
}

Status GcsStore::CreateBucket(const BucketOptions& options) {
  return client_->InsertBucket(options_.bucket, options.project);
}

}  // namespace spool::gcs
