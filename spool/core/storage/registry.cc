#include "spool/core/storage/registry.h"

#include <map>
#include <mutex>
#include <utility>

#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"

namespace spool {

namespace {

class Registry {
 public:
  Registry() {
    factories_["file"] = [](const Url&, const StoreOptions&) -> Result<std::shared_ptr<ObjectStore>> {
      return std::shared_ptr<ObjectStore>(std::make_shared<LocalStore>());
    };
    factories_["mem"] = [](const Url& url, const StoreOptions&) -> Result<std::shared_ptr<ObjectStore>> {
      return std::shared_ptr<ObjectStore>(std::make_shared<MemoryStore>(url.bucket));
    };
  }

  void Register(std::string scheme, StoreFactory factory) {
    std::lock_guard lock(mu_);
    // Stores made by the factory being replaced must not be handed out again.
    std::erase_if(cache_, [&](const auto& entry) { return entry.first.starts_with(scheme + '\n'); });
    factories_[std::move(scheme)] = std::move(factory);
  }

  Result<std::shared_ptr<ObjectStore>> Open(const Url& url, const StoreOptions& options) {
    std::string cache_key = CacheKey(url, options);
    StoreFactory factory;
    {
      std::lock_guard lock(mu_);
      if (auto cached = cache_.find(cache_key); cached != cache_.end()) return cached->second;
      auto found = factories_.find(url.scheme);
      if (found == factories_.end()) {
        std::string quoted = std::string("'").append(url.ToString()).append("'");
        return InvalidArgumentError(quoted + ": the " + url.scheme +
                                    " backend is not registered in this program (link spool::spool and call "
                                    "spool::RegisterAllBackends() at start-up)");
      }
      factory = found->second;
    }
    // The factory may take a while (credentials, endpoints): call it unlocked.
    SPOOL_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, factory(url, options));
    std::lock_guard lock(mu_);
    // A store another thread opened meanwhile wins.
    return cache_.try_emplace(cache_key, std::move(store)).first->second;
  }

 private:
  static std::string CacheKey(const Url& url, const StoreOptions& options) {
    std::string key = url.scheme + '\n' + url.bucket;
    for (const std::string* part :
         {&options.endpoint_url, &options.region, &options.profile, &options.ca_bundle}) {
      key += '\n' + *part;
    }
    key += '\n' + std::to_string(options.anonymous) + std::to_string(options.path_style);
    key += '\n' + std::to_string(reinterpret_cast<uintptr_t>(options.executor)) + '/' +
           std::to_string(reinterpret_cast<uintptr_t>(options.budget));
    return key;
  }

  std::mutex mu_;
  std::map<std::string, StoreFactory> factories_;
  std::map<std::string, std::shared_ptr<ObjectStore>> cache_;
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // never destroyed: usable during exit
  return *registry;
}

}  // namespace

void RegisterStoreFactory(std::string scheme, StoreFactory factory) {
  GlobalRegistry().Register(std::move(scheme), std::move(factory));
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
