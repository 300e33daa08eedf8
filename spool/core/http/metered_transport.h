// MeterTransport: an HttpTransport that counts every exchange of the one it
// wraps into RequestCounters (core/request_counters.h): the operation (from
// the backend's classifier), latency, time to the response headers, bytes
// each way, and the outcome's class. How each backend's requests reach
// their counters; the wrapped transport does the work.
//
// Thread-safe as the wrapped transport is. The counters and the classifier
// are shared with the wrapper and live as long as it does.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "spool/core/http/transport.h"
#include "spool/core/request_counters.h"

namespace spool {

using RequestClassifier = std::function<RequestOp(const HttpRequest&)>;

// For classifiers: whether `url`'s query has parameter `name` ("uploads" in
// "...?uploads", "partNumber" in "...?partNumber=1&uploadId=x"), and its
// value ("" when absent or empty).
bool HasQueryParameter(std::string_view url, std::string_view name);
std::string_view QueryParameter(std::string_view url, std::string_view name);

// `inner` itself when `counters` is null.
std::shared_ptr<HttpTransport> MeterTransport(std::shared_ptr<HttpTransport> inner,
                                              std::shared_ptr<RequestCounters> counters, RequestClassifier classify);

}  // namespace spool
