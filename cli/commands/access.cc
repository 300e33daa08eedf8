#include "cli/commands/access.h"

#include "cli/output.h"

namespace spool::cli {

StoreAccess DescribeStore(const StoreLocation& location) {
  StoreAccess access = location.store->Access();
  if (access.kind.empty()) {
    access.kind = location.url.scheme == "file" ? "local files" : location.url.scheme + " store";
  }
  return access;
}

Result<CredentialCheck> CheckCredentials(const StoreLocation& location) {
  SPOOL_ASSIGN_OR_RETURN(StoreIdentity identity, location.store->WhoAmI());
  CredentialCheck check;
  check.identity = std::move(identity.identity);
  check.source = std::move(identity.source);
  if (identity.expires) check.expires = FormatTimestamp(*identity.expires);
  return check;
}

}  // namespace spool::cli
