// S3Store's description of how it reaches S3, its identity, and bucket
// creation: what the CLI shows and does through ObjectStore.
#include <string>

#include "spool/s3/s3_store.h"

namespace spool::s3 {
namespace {

// "CEPH...0001": enough to tell keys apart, as the AWS CLI shows them.
std::string MaskKeyId(const std::string& id) {
  if (id.size() <= 8) return std::string(id.size(), '*');
  return id.substr(0, 4) + "..." + id.substr(id.size() - 4);
}

}  // namespace

StoreAccess S3Store::Access() const {
  const ResolvedConfig& config = client_->config();
  StoreAccess access;
  access.kind = "S3";
  access.endpoint = config.endpoint.ToString();
  access.settings = "region " + (config.region.empty() ? std::string("(none)") : config.region) + ", " +
                    (config.path_style ? "path-style" : "virtual-hosted") + " addressing" +
                    (config.custom_endpoint ? ", custom endpoint" : "") +
                    (config.profile.empty() ? "" : ", profile " + config.profile) +
                    (config.ca_bundle.empty() ? "" : ", CA bundle " + config.ca_bundle);
  access.anonymous = config.anonymous;
  return access;
}

Result<StoreIdentity> S3Store::WhoAmI() {
  if (client_->config().anonymous) return StoreIdentity{"anonymous", "--no-sign-request", std::nullopt};
  const auto& provider = client_->credentials();
  SPOOL_ASSIGN_OR_RETURN(Credentials credentials, provider->Get());
  StoreIdentity identity;
  identity.identity = credentials.anonymous() ? "anonymous" : "access key " + MaskKeyId(credentials.access_key_id);
  if (!credentials.session_token.empty()) identity.identity += " with a session token";
  identity.source = provider->Name();
  identity.expires = credentials.expiration;
  return identity;
}

Status S3Store::CreateBucket(const BucketOptions& /*options*/) { return client_->CreateBucket(); }

}  // namespace spool::s3
