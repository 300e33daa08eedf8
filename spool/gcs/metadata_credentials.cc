// Credentials from the GCE/GKE metadata server (on GKE with Workload
// Identity, the GKE metadata server answers for the pod's service account).
#include <chrono>
#include <string>
#include <utility>

#include "spool/gcs/credentials.h"
#include "spool/gcs/errors.h"
#include "spool/gcs/json.h"

namespace spool::gcs {

std::shared_ptr<Credentials> MakeMetadataServerCredentials(MetadataServerOptions options,
                                                           std::shared_ptr<HttpTransport> transport) {
  const std::string host = options.host.empty() ? std::string("169.254.169.254") : options.host;
  const std::string url = "http://" + host + "/computeMetadata/v1/instance/service-accounts/default/token";
  // One request per fetch: the request that needs the token retries it
  // (core/retry.h). A metadata server not ready yet (connection refused, a
  // timeout, 5xx) is Unavailable and retried that way; one that says this
  // instance or pod has no service account (403, 404) is Unauthenticated.
  auto fetch = [options, url, transport]() -> Result<AccessToken> {
    const std::string what = "fetch an access token from the metadata server at " + url;
    HttpRequest request;
    request.url = url;
    request.headers.Set("Metadata-Flavor", "Google");
    request.total_timeout = options.timeout;
    std::string body;
    StringSink sink(&body);
    const auto sent_at = std::chrono::system_clock::now();
    auto response = transport->Send(request, &sink);
    if (!response.ok()) return response.status().WithContext(what);
    if (response->status == 404 || response->status == 403) {
      return Status(StatusCode::kUnauthenticated,
                    what + ": HTTP " + std::to_string(response->status) +
                        " (no service account for this instance or pod; on GKE check the Workload Identity "
                        "binding)")
          .WithRemote(RemoteError{response->status, "", ""});
    }
    if (!response->ok()) return ErrorFromResponse(*response, what);
    auto token = ParseTokenResponse(body);
    if (!token.ok()) return token.status().WithContext(what);
    return AccessToken{std::move(token->access_token), sent_at + std::chrono::seconds(token->expires_in)};
  };
  return MakeTokenCredentials(std::move(fetch), "the metadata server at " + host +
                                                    " (GCE/GKE service account, Workload Identity)");
}

}  // namespace spool::gcs
