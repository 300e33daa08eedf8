#include "spool/core/storage/registry.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "spool/core/storage/local_store.h"
#include "spool/core/strings.h"
#include "spool/core/storage/memory_store.h"

namespace spool {

namespace {

Status CheckSettingKeys(const StoreOptions& options) {
  for (const auto& [key, value] : options.settings) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) {
      return InvalidArgumentError("the store setting \"" + key +
                                  "\" names no scheme; write it as <scheme>.<name>, e.g. s3.region");
    }
  }
  return OkStatus();
}

bool SetsAnyFunction(const RetryEnvironment& env) {
  return env.now || env.sleep || env.uniform01 || env.on_retry;
}

// Appends `field` length-prefixed, so that no two different keys encode the same.
void AppendField(std::string& key, std::string_view field) {
  key += std::to_string(field.size());
  key += ':';
  key += field;
}

// Everything that shapes the store `url` opens with `options`; executor,
// budget and counters by address, which is safe because the cache holds only
// live stores and a live store keeps these alive (see registry.h). And the
// process: a child made by fork() never gets a store of its parent, whose
// connections and pool are the parent's (executor.h, Fork).
std::string CacheKey(const Url& url, const StoreOptions& options) {
  std::string key;
  for (std::string_view field : {std::string_view(url.scheme), std::string_view(url.bucket),
                                 std::string_view(options.endpoint_url), std::string_view(options.ca_bundle)}) {
    AppendField(key, field);
  }
  const RetryPolicy& policy = options.retry.policy;
  for (int64_t number : {int64_t{policy.max_attempts}, int64_t{policy.initial_backoff.count()},
                         int64_t{policy.max_backoff.count()}, int64_t{policy.max_elapsed.count()},
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(options.executor)),
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(options.budget)),
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(options.counters.get())),
                         static_cast<int64_t>(ForkGeneration())}) {
    AppendField(key, std::to_string(number));
  }
  // Only this scheme's settings: the others do not change this store.
  const std::string prefix = url.scheme + '.';
  for (const auto& [name, value] : options.settings) {
    if (!name.starts_with(prefix)) continue;
    AppendField(key, name);
    AppendField(key, value);
  }
  return key;
}

class Registry {
 public:
  Registry() {
    factories_["file"] = [](const Url&, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
      SPOOL_RETURN_IF_ERROR(SchemeSettings(options, "file", {}).status());
      return std::shared_ptr<ObjectStore>(std::make_shared<LocalStore>());
    };
    factories_["mem"] = [](const Url& url, const StoreOptions& options) -> Result<std::shared_ptr<ObjectStore>> {
      SPOOL_RETURN_IF_ERROR(SchemeSettings(options, "mem", {}).status());
      return std::shared_ptr<ObjectStore>(std::make_shared<MemoryStore>(url.bucket));
    };
  }

  void Register(std::string scheme, StoreFactory factory) {
    std::lock_guard lock(mu_);
    // Stores made by the factory being replaced must not be handed out again.
    std::erase_if(cache_, [&](const auto& entry) { return entry.second.scheme == scheme; });
    factories_[std::move(scheme)] = std::move(factory);
  }

  Result<std::shared_ptr<ObjectStore>> Open(const Url& url, const StoreOptions& given) {
    SPOOL_RETURN_IF_ERROR(CheckSettingKeys(given));
    const bool shared = !SetsAnyFunction(given.retry.environment);
    const std::string cache_key = shared ? CacheKey(url, given) : std::string();
    StoreFactory factory;
    {
      std::lock_guard lock(mu_);
      std::erase_if(cache_, [](const auto& entry) { return entry.second.store.expired(); });
      if (shared) {
        if (auto cached = cache_.find(cache_key); cached != cache_.end()) {
          if (std::shared_ptr<ObjectStore> store = cached->second.store.lock()) return store;
        }
      }
      auto found = factories_.find(url.scheme);
      if (found == factories_.end()) {
        std::string quoted = std::string("'").append(url.ToString()).append("'");
        return InvalidArgumentError(quoted + ": the " + url.scheme +
                                    " backend is not registered in this program (link spool::spool and call "
                                    "spool::RegisterAllBackends() at start-up)");
      }
      factory = found->second;
    }
    StoreOptions options = given;
    if (!options.counters) options.counters = std::make_shared<RequestCounters>();
    // The factory may take a while (credentials, endpoints): call it unlocked.
    SPOOL_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, factory(url, options));
    store->UseCounters(options.counters);
    if (!shared) return store;
    std::lock_guard lock(mu_);
    Entry& entry = cache_[cache_key];
    // A store another thread opened meanwhile wins.
    if (std::shared_ptr<ObjectStore> existing = entry.store.lock()) return existing;
    entry = Entry{url.scheme, store};
    return store;
  }

 private:
  struct Entry {
    std::string scheme;
    std::weak_ptr<ObjectStore> store;
  };

  std::mutex mu_;
  std::map<std::string, StoreFactory> factories_;
  std::map<std::string, Entry> cache_;  // by CacheKey
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // never destroyed: usable during exit
  return *registry;
}

}  // namespace

void RegisterStoreFactory(std::string scheme, StoreFactory factory) {
  GlobalRegistry().Register(std::move(scheme), std::move(factory));
}

Result<std::map<std::string, std::string>> SchemeSettings(const StoreOptions& options, std::string_view scheme,
                                                          std::initializer_list<std::string_view> known) {
  std::map<std::string, std::string> found;
  for (const auto& [key, value] : options.settings) {
    if (!key.starts_with(scheme) || key.size() <= scheme.size() || key[scheme.size()] != '.') continue;
    std::string name = key.substr(scheme.size() + 1);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string known_list;
      for (std::string_view k : known) {
        known_list.append(known_list.empty() ? "" : ", ").append(scheme).append(".").append(k);
      }
      return InvalidArgumentError("unknown store setting \"" + key + "\" for " + std::string(scheme) + "://" +
                                  (known_list.empty() ? " (it takes none)" : " (known: " + known_list + ")"));
    }
    found.emplace(std::move(name), value);
  }
  return found;
}

Result<bool> ParseBoolSetting(std::string_view key, std::string_view value) {
  const std::string lower = AsciiToLower(value);
  if (lower == "true" || lower == "1" || lower == "yes") return true;
  if (lower == "false" || lower == "0" || lower == "no") return false;
  return InvalidArgumentError("the store setting \"" + std::string(key) + "\" is \"" + std::string(value) +
                              "\"; give true or false");
}

RetryOptions CountingRetry(const StoreOptions& options) {
  RetryOptions retry = options.retry;
  if (!options.counters) return retry;
  retry.environment.on_retry = [counters = options.counters, inner = options.retry.environment.on_retry](
                                   const Status& failure, int attempt, std::chrono::milliseconds delay) {
    counters->CountRetry(failure);
    if (inner) inner(failure, attempt, delay);
  };
  return retry;
}

Result<StoreLocation> OpenLocation(const Url& url, const StoreOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, GlobalRegistry().Open(url, options));
  return StoreLocation{std::move(store), url.key, url};
}

Result<StoreLocation> OpenLocation(std::string_view url, const StoreOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(Url parsed, ParseUrl(url));
  return OpenLocation(parsed, options);
}

}  // namespace spool
