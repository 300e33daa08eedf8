// Which RequestOp (core/request_counters.h) an S3 request is, from its
// method, query and headers: the classifier of the S3 store's metered
// transport.
#pragma once

#include "spool/core/http/transport.h"
#include "spool/core/request_counters.h"

namespace spool::s3 {

RequestOp ClassifyRequest(const HttpRequest& request);

}  // namespace spool::s3
