// Service-account and authorized-user credentials: both obtain tokens by a
// form POST to an OAuth2 token endpoint.
#include <chrono>
#include <string>
#include <utility>

#include "spool/core/retry.h"
#include "spool/gcs/credentials.h"
#include "spool/gcs/errors.h"
#include "spool/gcs/json.h"
#include "spool/gcs/jwt.h"
#include "spool/gcs/url_encoding.h"

namespace spool::gcs {
namespace {

constexpr std::chrono::seconds kAssertionLifetime{3600};

// One exchange at `token_uri`, one request: the request that needs the
// token retries it (core/retry.h). A refused grant is Unauthenticated
// (retrying will not help); 5xx and transport failures are Unavailable, which
// that loop retries.
Result<AccessToken> ExchangeForToken(HttpTransport& transport, const std::string& token_uri, const std::string& form,
                                     const std::string& who) {
  const std::string what = "fetch an access token for " + who + " from " + token_uri;
  HttpRequest request;
  request.method = "POST";
  request.url = token_uri;
  request.headers.Set("Content-Type", "application/x-www-form-urlencoded");
  request.body = form;
  std::string body;
  StringSink sink(&body);
  const auto sent_at = std::chrono::system_clock::now();
  auto response = transport.Send(request, &sink);
  if (!response.ok()) return response.status().WithContext(what);
  if (!response->ok()) {
    Status error = ErrorFromResponse(*response, what);
    if (!IsRetryable(error)) return Status(StatusCode::kUnauthenticated, error.message()).WithRemote(error.remote());
    return error;
  }
  auto token = ParseTokenResponse(body);
  if (!token.ok()) return token.status().WithContext(what);
  return AccessToken{std::move(token->access_token), sent_at + std::chrono::seconds(token->expires_in)};
}

}  // namespace

Result<std::shared_ptr<Credentials>> MakeServiceAccountCredentials(const CredentialsFile& key, std::string origin,
                                                                   std::shared_ptr<HttpTransport> transport) {
  if (key.client_email.empty() || key.private_key.empty()) {
    return InvalidArgumentError("the service account key (" + origin +
                                ") lacks client_email or private_key: download a new JSON key");
  }
  const std::string token_uri = key.token_uri.empty() ? std::string(kGoogleTokenUri) : key.token_uri;
  const std::string who = "service account " + key.client_email;
  auto fetch = [key, token_uri, who, transport]() -> Result<AccessToken> {
    const auto now = std::chrono::system_clock::now();
    JwtClaims claims;
    claims.issuer = key.client_email;
    claims.scope = std::string(kStorageScope);
    claims.audience = token_uri;
    claims.issued_at = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    claims.expires_at = claims.issued_at + kAssertionLifetime.count();
    SPOOL_ASSIGN_OR_RETURN(std::string assertion, MakeSignedJwt(claims, key.private_key, key.private_key_id));
    const std::string form =
        EncodeQuery({{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"}, {"assertion", assertion}});
    return ExchangeForToken(*transport, token_uri, form, who);
  };
  return MakeTokenCredentials(std::move(fetch), who + " from " + origin);
}

Result<std::shared_ptr<Credentials>> MakeAuthorizedUserCredentials(const CredentialsFile& file, std::string origin,
                                                                   std::shared_ptr<HttpTransport> transport) {
  if (file.client_id.empty() || file.client_secret.empty() || file.refresh_token.empty()) {
    return InvalidArgumentError("the authorized_user credentials (" + origin +
                                ") lack client_id, client_secret or refresh_token: run "
                                "`gcloud auth application-default login` again");
  }
  const std::string token_uri = file.token_uri.empty() ? std::string(kGoogleTokenUri) : file.token_uri;
  const std::string who = "authorized user (client " + file.client_id + ")";
  auto fetch = [file, token_uri, who, transport]() -> Result<AccessToken> {
    const std::string form = EncodeQuery({{"grant_type", "refresh_token"},
                                          {"client_id", file.client_id},
                                          {"client_secret", file.client_secret},
                                          {"refresh_token", file.refresh_token}});
    return ExchangeForToken(*transport, token_uri, form, who);
  };
  return MakeTokenCredentials(std::move(fetch), who + " from " + origin);
}

}  // namespace spool::gcs
