// Status and Result<T>: how every spool API reports failure.
//
// No exception crosses a spool library boundary. A Status carries a canonical
// code, a message meant for a person (it names the thing: URL, shard, offset,
// and says what to do), and for errors that came from a remote service the
// HTTP status, the service's own error code and its request id.
//
// Status and Result are values: copy, move and compare them freely from any
// thread.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace spool {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kUnauthenticated,
  kFailedPrecondition,
  kOutOfRange,
  kUnavailable,
  kDeadlineExceeded,
  kDataLoss,
  kCancelled,
  kInternal,
  kUnimplemented,
  kResourceExhausted,
};

// "NotFound", "DataLoss", ...: the name used in messages and --json output.
std::string_view StatusCodeName(StatusCode code);

// What a remote service said about an error, kept for the message and logs.
struct RemoteError {
  int http_status = 0;        // 0 when no HTTP answer was received
  std::string service_code;   // e.g. "NoSuchKey", "SlowDown", "notFound"
  std::string request_id;     // x-amz-request-id, x-guploader-uploadid, ...
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const RemoteError& remote() const { return remote_; }

  // Attaches what the service said; returns *this for chaining.
  Status& WithRemote(RemoteError remote) &;
  Status&& WithRemote(RemoteError remote) &&;

  // A copy whose message is "context: message" (no-op on OK).
  Status WithContext(std::string_view context) const;

  // One line: "NotFound: message [HTTP 404 NoSuchKey, request id abc]".
  std::string ToString() const;

  // Ignores the status on purpose (documents that the caller decided so).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  RemoteError remote_;
};

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status UnauthenticatedError(std::string message);
Status FailedPreconditionError(std::string message);
Status OutOfRangeError(std::string message);
Status UnavailableError(std::string message);
Status DeadlineExceededError(std::string message);
Status DataLossError(std::string message);
Status CancelledError(std::string message);
Status InternalError(std::string message);
Status UnimplementedError(std::string message);
Status ResourceExhaustedError(std::string message);

// Either a T or a non-OK Status. Accessing value() of an error is a bug
// (asserts in debug builds).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result constructed from an OK status without a value");
    if (status_.ok()) status_ = InternalError("Result constructed from OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  std::optional<T> value_;
  Status status_;  // OK iff value_ is set
};

}  // namespace spool

#define SPOOL_CONCAT_INNER_(a, b) a##b
#define SPOOL_CONCAT_(a, b) SPOOL_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define SPOOL_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::spool::Status spool_status_ = (expr);           \
    if (!spool_status_.ok()) return spool_status_;    \
  } while (0)

// `SPOOL_ASSIGN_OR_RETURN(auto x, MakeX());` declares/assigns x from a
// Result, or returns its Status from the enclosing function.
#define SPOOL_ASSIGN_OR_RETURN(lhs, expr) \
  SPOOL_ASSIGN_OR_RETURN_IMPL_(SPOOL_CONCAT_(spool_result_, __LINE__), lhs, expr)
#define SPOOL_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                                 \
  if (!result.ok()) return result.status();             \
  lhs = std::move(result).value()
