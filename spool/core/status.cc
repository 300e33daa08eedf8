#include "spool/core/status.h"

namespace spool {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kUnauthenticated: return "Unauthenticated";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

Status& Status::WithRemote(RemoteError remote) & {
  remote_ = std::move(remote);
  return *this;
}

Status&& Status::WithRemote(RemoteError remote) && {
  remote_ = std::move(remote);
  return std::move(*this);
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  Status copy = *this;
  copy.message_ = std::string(context) + ": " + message_;
  return copy;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  if (remote_.http_status != 0 || !remote_.service_code.empty() || !remote_.request_id.empty()) {
    out += " [";
    bool first = true;
    auto add = [&](const std::string& part) {
      if (!first) out += ' ';
      out += part;
      first = false;
    };
    if (remote_.http_status != 0) add("HTTP " + std::to_string(remote_.http_status));
    if (!remote_.service_code.empty()) add(remote_.service_code);
    if (!remote_.request_id.empty()) add("request id " + remote_.request_id);
    out += ']';
  }
  return out;
}

#define SPOOL_DEFINE_ERROR_FACTORY(Name, Code) \
  Status Name(std::string message) { return Status(StatusCode::Code, std::move(message)); }
SPOOL_DEFINE_ERROR_FACTORY(InvalidArgumentError, kInvalidArgument)
SPOOL_DEFINE_ERROR_FACTORY(NotFoundError, kNotFound)
SPOOL_DEFINE_ERROR_FACTORY(AlreadyExistsError, kAlreadyExists)
SPOOL_DEFINE_ERROR_FACTORY(PermissionDeniedError, kPermissionDenied)
SPOOL_DEFINE_ERROR_FACTORY(UnauthenticatedError, kUnauthenticated)
SPOOL_DEFINE_ERROR_FACTORY(FailedPreconditionError, kFailedPrecondition)
SPOOL_DEFINE_ERROR_FACTORY(OutOfRangeError, kOutOfRange)
SPOOL_DEFINE_ERROR_FACTORY(UnavailableError, kUnavailable)
SPOOL_DEFINE_ERROR_FACTORY(DeadlineExceededError, kDeadlineExceeded)
SPOOL_DEFINE_ERROR_FACTORY(DataLossError, kDataLoss)
SPOOL_DEFINE_ERROR_FACTORY(CancelledError, kCancelled)
SPOOL_DEFINE_ERROR_FACTORY(InternalError, kInternal)
SPOOL_DEFINE_ERROR_FACTORY(UnimplementedError, kUnimplemented)
SPOOL_DEFINE_ERROR_FACTORY(ResourceExhaustedError, kResourceExhausted)
#undef SPOOL_DEFINE_ERROR_FACTORY

}  // namespace spool
