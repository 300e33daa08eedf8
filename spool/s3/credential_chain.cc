// The default chain, the chain itself and the refreshing cache.
#include <chrono>
#include <functional>
#include <mutex>

#include "spool/s3/credential_providers.h"

namespace spool::s3 {
namespace {

class RefreshingProvider : public CredentialsProvider {
 public:
  RefreshingProvider(std::shared_ptr<CredentialsProvider> inner, std::chrono::seconds refresh_ahead,
                     std::function<std::chrono::system_clock::time_point()> now)
      : inner_(std::move(inner)), refresh_ahead_(refresh_ahead), now_(std::move(now)) {
    if (!now_) now_ = [] { return std::chrono::system_clock::now(); };
  }

  Result<Credentials> Get() override {
    if (auto fresh = Cached(/*fresh_only=*/true)) return *fresh;
    std::unique_lock refresh(refresh_mu_, std::try_to_lock);
    if (!refresh.owns_lock()) {
      // Another thread is refreshing: use the old answer while it is valid,
      // else wait for the refresh and take its result.
      if (auto valid = Cached(/*fresh_only=*/false)) return *valid;
      refresh.lock();
      if (auto fresh = Cached(/*fresh_only=*/true)) return *fresh;
    }
    Result<Credentials> got = inner_->Get();
    std::lock_guard lock(mu_);
    if (got.ok()) {
      cached_ = *got;
      return got;
    }
    if (cached_ && (!cached_->expiration || *cached_->expiration > now_())) return *cached_;
    return got;
  }

  std::string Name() const override { return inner_->Name(); }

 private:
  std::optional<Credentials> Cached(bool fresh_only) {
    std::lock_guard lock(mu_);
    if (!cached_) return std::nullopt;
    if (!cached_->expiration) return cached_;
    const auto deadline = *cached_->expiration - (fresh_only ? refresh_ahead_ : std::chrono::seconds(0));
    if (now_() < deadline) return cached_;
    return std::nullopt;
  }

  const std::shared_ptr<CredentialsProvider> inner_;
  const std::chrono::seconds refresh_ahead_;
  std::function<std::chrono::system_clock::time_point()> now_;
  std::mutex refresh_mu_;  // held by the one thread refreshing
  std::mutex mu_;          // guards cached_
  std::optional<Credentials> cached_;
};

class ChainProvider : public CredentialsProvider {
 public:
  ChainProvider(std::vector<std::shared_ptr<CredentialsProvider>> providers,
                std::function<std::chrono::steady_clock::time_point()> now)
      : providers_(std::move(providers)), now_(std::move(now)) {
    if (!now_) now_ = [] { return std::chrono::steady_clock::now(); };
  }

  Result<Credentials> Get() override {
    if (auto chosen = Chosen()) return chosen->Get();  // outside the lock: refreshes may block
    std::lock_guard lock(mu_);                         // one search at a time
    if (chosen_) return chosen_->Get();
    if (!none_found_.ok() && now_() < search_again_at_) return none_found_;
    std::string tried;
    for (const auto& provider : providers_) {
      Result<Credentials> got = provider->Get();
      if (got.ok()) {
        chosen_ = provider;
        return got;
      }
      if (got.status().code() != StatusCode::kNotFound) {
        return got.status().WithContext("AWS credentials from " + provider->Name());
      }
      if (!tried.empty()) tried += "; ";
      tried += got.status().message();
    }
    // Unauthenticated, not NotFound: a caller that treats NotFound as "no
    // such object" (start training from scratch) must not mistake missing
    // credentials for a missing checkpoint.
    none_found_ = UnauthenticatedError(
        "no AWS credentials found (" + tried +
        "): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, configure a profile in ~/.aws/credentials "
        "(AWS_PROFILE), or use --no-sign-request for a public bucket");
    search_again_at_ = now_() + kSearchAgainAfter;
    return none_found_;
  }

  std::string Name() const override {
    auto chosen = Chosen();
    return chosen ? chosen->Name() : "the default credential chain";
  }

 private:
  std::shared_ptr<CredentialsProvider> Chosen() const {
    std::lock_guard lock(mu_);
    return chosen_;
  }

  // How long "no credentials" stands before the next request searches
  // again: long enough that a process without credentials does not pay a
  // search (an IMDS timeout off EC2) per request, short enough that one
  // whose credentials arrive late (a volume mounted after start-up, an IMDS
  // that did not answer in time) recovers without a restart.
  static constexpr std::chrono::seconds kSearchAgainAfter{30};

  const std::vector<std::shared_ptr<CredentialsProvider>> providers_;
  std::function<std::chrono::steady_clock::time_point()> now_;
  mutable std::mutex mu_;
  std::shared_ptr<CredentialsProvider> chosen_;
  Status none_found_;
  std::chrono::steady_clock::time_point search_again_at_;
};

}  // namespace

std::shared_ptr<CredentialsProvider> MakeRefreshingCredentials(
    std::shared_ptr<CredentialsProvider> inner, std::chrono::seconds refresh_ahead,
    std::function<std::chrono::system_clock::time_point()> now) {
  return std::make_shared<RefreshingProvider>(std::move(inner), refresh_ahead, std::move(now));
}

std::shared_ptr<CredentialsProvider> MakeChain(std::vector<std::shared_ptr<CredentialsProvider>> providers,
                                               std::function<std::chrono::steady_clock::time_point()> now) {
  return std::make_shared<ChainProvider>(std::move(providers), std::move(now));
}

std::shared_ptr<CredentialsProvider> MakeDefaultChain(const ChainOptions& options, Env env,
                                                      std::shared_ptr<HttpTransport> http) {
  if (!options.access_key_id.empty()) {
    return std::make_shared<StaticCredentialsProvider>(
        Credentials{options.access_key_id, options.secret_access_key, options.session_token, std::nullopt},
        "explicit keys");
  }
  return MakeChain({
      MakeEnvironmentCredentials(env),
      MakeProfileCredentials(env, options.profile),
      MakeWebIdentityCredentials(env, options.profile, options.region, http),
      MakeContainerCredentials(env, http),
      MakeInstanceMetadataCredentials(env, http),
  });
}

}  // namespace spool::s3
