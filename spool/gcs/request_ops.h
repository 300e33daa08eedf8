// Which RequestOp (core/request_counters.h) a GCS JSON API request is, from
// its method and URL: the classifier of the GCS store's metered transport
// (which also carries its credential requests).
#pragma once

#include "spool/core/http/transport.h"
#include "spool/core/request_counters.h"

namespace spool::gcs {

RequestOp ClassifyRequest(const HttpRequest& request);

}  // namespace spool::gcs
