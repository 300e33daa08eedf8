#include "cli/commands/access.h"

#include <pwd.h>
#include <unistd.h>

#include "cli/output.h"
#include "spool/backends_config.h"
#if SPOOL_HAVE_GCS
#include "spool/gcs/gcs_store.h"
#endif
#if SPOOL_HAVE_S3
#include "spool/s3/s3_store.h"
#endif

namespace spool::cli {
namespace {

// "CEPH...0001": enough to tell keys apart, as the AWS CLI shows them.
std::string MaskKeyId(const std::string& id) {
  if (id.size() <= 8) return std::string(id.size(), '*');
  return id.substr(0, 4) + "..." + id.substr(id.size() - 4);
}

}  // namespace

StoreAccess DescribeStore(const StoreLocation& location) {
  StoreAccess access;
#if SPOOL_HAVE_S3
  if (auto* s3 = dynamic_cast<s3::S3Store*>(location.store.get())) {
    const s3::ResolvedConfig& config = s3->client().config();
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
#endif
#if SPOOL_HAVE_GCS
  if (auto* gcs = dynamic_cast<gcs::GcsStore*>(location.store.get())) {
    access.kind = "GCS";
    access.endpoint = gcs->client().options().endpoint;
    access.settings = gcs->DescribeAccess();
    return access;
  }
#endif
  access.kind = location.url.scheme == "file" ? "local files" : location.url.scheme + " store";
  return access;
}

Result<CredentialCheck> CheckCredentials(const StoreLocation& location) {
  CredentialCheck check;
#if SPOOL_HAVE_S3
  if (auto* s3 = dynamic_cast<s3::S3Store*>(location.store.get())) {
    if (s3->client().config().anonymous) return CredentialCheck{"anonymous", "--no-sign-request", ""};
    const auto& provider = s3->client().credentials();
    SPOOL_ASSIGN_OR_RETURN(s3::Credentials credentials, provider->Get());
    check.identity = credentials.anonymous() ? "anonymous" : "access key " + MaskKeyId(credentials.access_key_id);
    if (!credentials.session_token.empty()) check.identity += " with a session token";
    check.source = provider->Name();
    if (credentials.expiration) check.expires = FormatTimestamp(*credentials.expiration);
    return check;
  }
#endif
#if SPOOL_HAVE_GCS
  if (auto* gcs = dynamic_cast<gcs::GcsStore*>(location.store.get())) {
    const auto& credentials = gcs->client().options().credentials;
    SPOOL_ASSIGN_OR_RETURN(std::string header, credentials->AuthorizationHeader());
    check.identity = header.empty() ? "anonymous" : "an OAuth2 access token";
    check.source = credentials->Describe();
    return check;
  }
#endif
  uid_t uid = ::geteuid();
  struct passwd* user = ::getpwuid(uid);
  check.identity = "uid " + std::to_string(uid) + (user ? " (" + std::string(user->pw_name) + ")" : "");
  check.source = "file permissions of the process";
  return check;
}

}  // namespace spool::cli
