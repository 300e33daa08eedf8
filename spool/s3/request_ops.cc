#include "spool/s3/request_ops.h"

#include "spool/core/http/metered_transport.h"

namespace spool::s3 {

RequestOp ClassifyRequest(const HttpRequest& request) {
  const std::string& url = request.url;
  const std::string& method = request.method;
  if (method == "HEAD") return RequestOp::kHead;
  if (method == "DELETE") return HasQueryParameter(url, "uploadId") ? RequestOp::kMultipart : RequestOp::kDelete;
  if (method == "POST") {
    if (HasQueryParameter(url, "delete")) return RequestOp::kDelete;
    if (HasQueryParameter(url, "uploads") || HasQueryParameter(url, "uploadId")) return RequestOp::kMultipart;
    return RequestOp::kOther;
  }
  if (method == "PUT") {
    if (request.headers.Has("x-amz-copy-source")) return RequestOp::kCopy;
    if (HasQueryParameter(url, "partNumber")) return RequestOp::kPartUpload;
    return RequestOp::kPut;
  }
  if (method == "GET") {
    if (HasQueryParameter(url, "list-type")) return RequestOp::kList;
    if (HasQueryParameter(url, "uploads") || HasQueryParameter(url, "uploadId")) return RequestOp::kMultipart;
    if (HasQueryParameter(url, "location")) return RequestOp::kOther;
    return request.headers.Has("Range") ? RequestOp::kRangedGet : RequestOp::kGet;
  }
  return RequestOp::kOther;
}

}  // namespace spool::s3
