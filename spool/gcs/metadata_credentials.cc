// Credentials from the GCE/GKE metadata server (on GKE with Workload
// Identity, the GKE metadata server answers for the pod's service account).
#include <chrono>
#include <string>
#include <utility>

#include "spool/core/retry.h"
#include "spool/gcs/credentials.h"
#include "spool/gcs/errors.h"
#include "spool/gcs/json.h"

namespace spool::gcs {

std::shared_ptr<Credentials> MakeMetadataServerCredentials(MetadataServerOptions options,
                                                           std::shared_ptr<HttpTransport> transport) {
  const std::string host = options.host.empty() ? std::string("169.254.169.254") : options.host;
  const std::string url = "http://" + host + "/computeMetadata/v1/instance/service-accounts/default/token";
  auto fetch = [options, url, transport]() -> Result<AccessToken> {
    const std::string what = "fetch an access token from the metadata server at " + url;
    return Retry(
        options.retry.policy, Idempotency::kIdempotent, what, [&]() -> Result<AccessToken> {
      HttpRequest request;
      request.url = url;
      request.headers.Set("Metadata-Flavor", "Google");
      request.total_timeout = options.timeout;
      std::string body;
      StringSink sink(&body);
      const auto sent_at = std::chrono::system_clock::now();
      SPOOL_ASSIGN_OR_RETURN(HttpResponse response, transport->Send(request, &sink));
      if (response.status == 404 || response.status == 403) {
        // Not ready yet on a new GKE pod, or no service account bound to it.
        return Status(StatusCode::kUnavailable,
                      what + ": HTTP " + std::to_string(response.status) +
                          " (no service account for this instance or pod yet; on GKE check the Workload "
                          "Identity binding)");
      }
      if (!response.ok()) return ErrorFromResponse(response, what);
      auto token = ParseTokenResponse(body);
      if (!token.ok()) return token.status().WithContext(what);
      return AccessToken{std::move(token->access_token), sent_at + std::chrono::seconds(token->expires_in)};
        },
        options.retry.environment);
  };
  return MakeTokenCredentials(std::move(fetch), "the metadata server at " + host +
                                                    " (GCE/GKE service account, Workload Identity)");
}

}  // namespace spool::gcs
