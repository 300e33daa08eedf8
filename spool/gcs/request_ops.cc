#include "spool/gcs/request_ops.h"

#include "spool/core/http/metered_transport.h"

namespace spool::gcs {

RequestOp ClassifyRequest(const HttpRequest& request) {
  const std::string& url = request.url;
  const std::string& method = request.method;
  const std::string_view path = std::string_view(url).substr(0, url.find('?'));
  // OAuth token endpoints and the metadata server's token.
  if (path.ends_with("/token") || path.find("computeMetadata") != std::string_view::npos) {
    return RequestOp::kTokenFetch;
  }
  if (HasQueryParameter(url, "upload_id")) {  // a resumable session's URI
    if (method == "DELETE") return RequestOp::kMultipart;
    // "bytes */N" asks where the session is; anything else sends bytes.
    const auto range = request.headers.Get("Content-Range");
    if (range && range->starts_with("bytes */")) return RequestOp::kMultipart;
    return RequestOp::kPartUpload;
  }
  if (path.find("/upload/storage/") != std::string_view::npos) {
    return QueryParameter(url, "uploadType") == "resumable" ? RequestOp::kMultipart : RequestOp::kPut;
  }
  if (path.find("/rewriteTo/") != std::string_view::npos || path.find("/copyTo/") != std::string_view::npos ||
      path.ends_with("/compose")) {
    return RequestOp::kCopy;
  }
  if (method == "DELETE") return RequestOp::kDelete;
  if (method == "GET") {
    if (QueryParameter(url, "alt") == "media") {
      return request.headers.Has("Range") ? RequestOp::kRangedGet : RequestOp::kGet;
    }
    if (path.ends_with("/o")) return RequestOp::kList;
    if (path.find("/o/") != std::string_view::npos) return RequestOp::kHead;  // object metadata
  }
  return RequestOp::kOther;
}

}  // namespace spool::gcs
