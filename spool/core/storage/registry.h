// Open(url): from a URL to the store that serves it.
//
// Each backend registers a factory for its scheme. core registers "file" and
// "mem" itself; s3 and gcs are registered by spool::RegisterAllBackends() of
// the umbrella library (spool/register_backends.h), called explicitly by the
// programs that want them, so core never includes a backend's header and no
// static-initialisation order matters.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "spool/core/executor.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/core/url.h"

namespace spool {

// Settings a user may give on the command line or in code; each backend
// takes what applies to it and falls back to its environment conventions
// (AWS_*, GOOGLE_*, STORAGE_EMULATOR_HOST, ...) for what is left empty.
struct StoreOptions {
  std::string endpoint_url;
  std::string region;
  std::string profile;
  std::string ca_bundle;
  bool anonymous = false;   // --no-sign-request
  bool path_style = false;  // force path-style addressing (S3)
  Executor* executor = nullptr;  // default: DefaultExecutor()
  ByteBudget* budget = nullptr;  // default: DefaultByteBudget()
};

using StoreFactory =
    std::function<Result<std::shared_ptr<ObjectStore>>(const Url& url, const StoreOptions& options)>;

// Registers (or replaces) the factory for `scheme`. Thread-safe.
void RegisterStoreFactory(std::string scheme, StoreFactory factory);

// A store plus the key the URL named inside it.
struct StoreLocation {
  std::shared_ptr<ObjectStore> store;
  std::string key;
  Url url;
};

// Parses `url` and opens its store. Stores are cached per scheme+bucket+
// options, so opening many URLs of one bucket shares connections.
// InvalidArgument for a malformed URL or a scheme nobody registered (the
// message says which build flag or call adds it).
Result<StoreLocation> OpenLocation(std::string_view url, const StoreOptions& options = {});
Result<StoreLocation> OpenLocation(const Url& url, const StoreOptions& options = {});

}  // namespace spool
