// From a failed Cloud Storage (or OAuth2) HTTP answer to a Status.
//
// The code follows the HTTP status (and the JSON error's reason where it
// matters); the message is "<what>: <the service's message> (<reason>)" and
// the Status carries the HTTP status, the reason and the upload/request id
// (RemoteError). Codes the retry loop retries: 408, 429 and 5xx map to
// Unavailable. Pure functions, thread-safe.
#pragma once

#include <string_view>

#include "spool/core/http/transport.h"
#include "spool/core/status.h"

namespace spool::gcs {

// The canonical code for an HTTP status of the JSON API.
StatusCode StatusCodeForHttpStatus(int http_status);

// The Status for a non-2xx `response` to the request described by `what`
// (e.g. "GET gs://bucket/key"). Adds a hint for 401/403 on what to check.
Status ErrorFromResponse(const HttpResponse& response, std::string_view what);

}  // namespace spool::gcs
