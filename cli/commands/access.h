// How spool reaches the store of a URL, for `spool whoami` and `spool
// doctor`: the endpoint, the settings that shaped it, and the credentials
// (where they came from, never a secret).
#pragma once

#include <string>

#include "spool/core/status.h"
#include "spool/core/storage/registry.h"

namespace spool::cli {

// The store's own ObjectStore::Access(), with the kind named after the
// URL's scheme for stores that reach no service ("local files").
StoreAccess DescribeStore(const StoreLocation& location);

struct CredentialCheck {
  std::string identity;  // "access key CEPH...0001", "service account x@y", "uid 0 (root)"
  std::string source;    // "environment", "profile dev in ~/.aws/credentials", ...
  std::string expires;   // for temporary credentials, else empty
};

// ObjectStore::WhoAmI() of the store, for printing: obtains the credentials
// the store would sign with (this may fetch a token). Errors say what is
// missing and how to provide it.
Result<CredentialCheck> CheckCredentials(const StoreLocation& location);

}  // namespace spool::cli
