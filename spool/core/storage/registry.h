// Open(url): from a URL to the store that serves it.
//
// Each backend registers a factory for its scheme. core registers "file" and
// "mem" itself; s3 and gcs are registered by spool::RegisterAllBackends() of
// the umbrella library (spool/register_backends.h), called explicitly by the
// programs that want them, so core never includes a backend's header and no
// static-initialisation order matters.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "spool/core/executor.h"
#include "spool/core/retry.h"
#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/core/url.h"

namespace spool {

// How to open a store: the settings every backend understands, and
// per-scheme settings that only the backend of that scheme reads. Each
// backend falls back to its environment conventions (AWS_*, GOOGLE_*,
// STORAGE_EMULATOR_HOST, ...) for what is left empty.
struct StoreOptions {
  std::string endpoint_url;      // the service endpoint; empty: the backend's default
  std::string ca_bundle;         // PEM file of the CAs to trust; empty: the system's
  Executor* executor = nullptr;  // default: DefaultExecutor(); must outlive the store
  ByteBudget* budget = nullptr;  // default: DefaultByteBudget(); must outlive the store
  // How every request of the store retries. A store whose environment sets
  // any function (a fake clock, an on_retry hook) is never shared: see
  // OpenLocation.
  RetryOptions retry;
  // Per-scheme settings, "<scheme>.<name>" -> value. The backend of a scheme
  // parses its own keys and rejects a key of its scheme it does not know
  // (InvalidArgument naming it); keys of other schemes are ignored, so one
  // StoreOptions can serve URLs of every scheme. Booleans are true/false.
  //   s3.region      the bucket's region (else AWS_REGION, the profile, us-east-1)
  //   s3.profile     the ~/.aws profile for credentials and config
  //   s3.path_style  true: http://host/bucket/key addressing
  //   s3.anonymous   true: unsigned requests (--no-sign-request)
  //   gs.anonymous   true: no credentials
  std::map<std::string, std::string> settings;
  // Where the store counts its requests (ObjectStore::counters()). Empty:
  // counters of its own. Stores opened with the same counters share them,
  // which is how a data loader counts exactly its own requests.
  std::shared_ptr<RequestCounters> counters;
};

// The settings of `scheme` in `options` with the prefix taken off
// ("s3.region" -> "region"), after checking that each is one of `known`:
// InvalidArgument naming the first unknown key. For factories.
Result<std::map<std::string, std::string>> SchemeSettings(const StoreOptions& options, std::string_view scheme,
                                                          std::initializer_list<std::string_view> known);
// "true"/"false" (also 1/0, yes/no) -> bool; InvalidArgument naming `key`.
Result<bool> ParseBoolSetting(std::string_view key, std::string_view value);
// options.retry with its on_retry hook also counting into options.counters
// (when set): what a factory hands its backend.
RetryOptions CountingRetry(const StoreOptions& options);

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

// Parses `url` and opens its store.
//
// Sharing and lifetime: while a store is in use (someone holds its
// shared_ptr), opening another URL with an equal key gets the same store,
// so many URLs of one bucket share connections and credentials. The key is
// the values that shape the store: scheme, bucket, endpoint_url, ca_bundle,
// the retry policy, the settings of that scheme, and which executor, budget
// and counters it uses. The registry holds stores weakly: a store lives as
// long as its users and is destroyed with the last of them, and the next
// open makes a new one. So an executor or budget pointer in the key always
// belongs to a live store, which must not outlive it: a freed and reused
// address can never meet a stale store. Options whose retry environment
// sets any function open a store of their own, never shared.
//
// Errors: InvalidArgument for a malformed URL, a scheme nobody registered
// (the message says which build flag or call adds it), a setting key that
// is not "<scheme>.<name>", or a setting the scheme's backend rejects.
Result<StoreLocation> OpenLocation(std::string_view url, const StoreOptions& options = {});
Result<StoreLocation> OpenLocation(const Url& url, const StoreOptions& options = {});

}  // namespace spool
