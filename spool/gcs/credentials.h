// Credentials for Cloud Storage: where the access token on each request
// comes from.
//
// Every implementation is thread-safe and caches its token (TokenCache),
// refreshing it before expiry. A token fetch sends one request and does not
// retry: a transient failure is Unavailable (or DeadlineExceeded) and the
// store request that needed the token retries both (core/retry.h); a refused
// grant, a key the endpoint does not know or a missing service account is
// Unauthenticated. AuthorizationHeader() is what a request puts
// in its Authorization header; anonymous credentials return "" and requests
// go without one. Describe() says which credentials these are (kind,
// account, file) for SPOOL_LOG=info and error messages: never a secret.
//
// The Application Default Credentials chain that picks one of these lives in
// default_credentials.h.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "spool/core/http/transport.h"
#include "spool/core/status.h"
#include "spool/gcs/resources.h"
#include "spool/gcs/token_cache.h"

namespace spool::gcs {

class Credentials {
 public:
  virtual ~Credentials() = default;
  // "Bearer <token>", or "" for anonymous access. Fetches a token when the
  // cached one is missing or about to expire.
  virtual Result<std::string> AuthorizationHeader() = 0;
  // Drops a cached token the service rejected (401), so the next call fetches.
  virtual void Invalidate() {}
  virtual std::string Describe() const = 0;
};

// The scope spool asks for: read and write objects.
inline constexpr std::string_view kStorageScope = "https://www.googleapis.com/auth/devstorage.read_write";
// Where tokens come from when a key file names no token_uri.
inline constexpr std::string_view kGoogleTokenUri = "https://oauth2.googleapis.com/token";

std::shared_ptr<Credentials> MakeAnonymousCredentials();

// Credentials whose tokens come from `fetch`, cached by a TokenCache: the
// building block of the kinds below, and a way to plug in a token source of
// one's own. `description` is what Describe() returns.
std::shared_ptr<Credentials> MakeTokenCredentials(TokenCache::Fetch fetch, std::string description);

// A service_account key: each token is obtained by signing a JWT (RS256)
// and exchanging it at the key's token_uri. `origin` says where the key came
// from, for Describe() (e.g. "GOOGLE_APPLICATION_CREDENTIALS=/secrets/key.json").
Result<std::shared_ptr<Credentials>> MakeServiceAccountCredentials(const CredentialsFile& key, std::string origin,
                                                                   std::shared_ptr<HttpTransport> transport);

// An authorized_user file (what `gcloud auth application-default login`
// writes): tokens come from exchanging its refresh token at token_uri
// (Google's endpoint unless the file names another).
Result<std::shared_ptr<Credentials>> MakeAuthorizedUserCredentials(const CredentialsFile& file, std::string origin,
                                                                   std::shared_ptr<HttpTransport> transport);

// Reads a JSON credentials file and makes the credentials its "type" names.
// Errors name the file and say what is wrong with it (never its contents).
Result<std::shared_ptr<Credentials>> LoadCredentialsFile(const std::string& path, std::string origin,
                                                         std::shared_ptr<HttpTransport> transport);

// The GCE/GKE metadata server (Workload Identity on GKE). `host` is
// "host[:port]" (GCE_METADATA_HOST) or empty for 169.254.169.254. Each
// request has a short timeout.
struct MetadataServerOptions {
  std::string host;
  std::chrono::milliseconds timeout{2'000};
};
std::shared_ptr<Credentials> MakeMetadataServerCredentials(MetadataServerOptions options,
                                                           std::shared_ptr<HttpTransport> transport);

}  // namespace spool::gcs
