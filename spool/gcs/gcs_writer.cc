#include "spool/gcs/gcs_writer.h"

#include <utility>

#include "spool/core/cancel.h"
#include "spool/core/crc32c.h"

namespace spool::gcs {
namespace {
NewObject MakeNewObject(const std::string& key, const WriteOptions& options, std::optional<uint32_t> crc) {
  return NewObject{key, options.content_type.empty() ? "application/octet-stream" : options.content_type, crc};
}
}  // namespace

GcsWriterImpl::GcsWriterImpl(std::shared_ptr<GcsClient> client, std::string bucket, std::string key,
                             WriteOptions options, WriterSettings settings)
    : client_(std::move(client)),
      bucket_(std::move(bucket)),
      key_(std::move(key)),
      url_(GcsClient::Url(bucket_, key_)),
      options_(std::move(options)),
      settings_(settings) {}

Result<std::unique_ptr<GcsWriter>> GcsWriterImpl::Create(std::shared_ptr<GcsClient> client, std::string bucket,
                                                         std::string key, WriteOptions options,
                                                         WriterSettings settings, bool resumable,
                                                         std::optional<ResumableUploadState> resume) {
  const bool large = options.expected_size && *options.expected_size > settings.resumable_threshold;
  std::unique_ptr<GcsWriterImpl> writer(
      new GcsWriterImpl(std::move(client), std::move(bucket), std::move(key), std::move(options), settings));
  if (resumable || large || resume) SPOOL_RETURN_IF_ERROR(writer->StartResumable(std::move(resume)));
  return std::unique_ptr<GcsWriter>(std::move(writer));
}

GcsWriterImpl::~GcsWriterImpl() {
  if (!done_) Abort();
}

Preconditions GcsWriterImpl::WritePreconditions() const {
  Preconditions preconditions;
  if (options_.if_not_exists) preconditions.if_generation_match = 0;
  return preconditions;
}


Status GcsWriterImpl::StartResumable(std::optional<ResumableUploadState> resume) {
  ResumableUploadState state;
  if (resume) {
    // Ask the session where it stands before trusting the saved state.
    // A status query (one exchange) changes nothing, so it is repeated.
    const RetryOptions& retry = client_->options().retry;
    auto status = RetryThrottled(
        retry.policy, Idempotency::kIdempotent, "resume the upload to " + url_,
        [&] { return client_->QueryUpload(resume->session_uri); }, retry.environment,
        client_->options().throttle.get());
    if (!status.ok()) return status.status().WithContext("resume the upload to " + url_);
    if (status->object) {
      return FailedPreconditionError("the resumable upload to " + url_ + " is already complete");
    }
    if (status->committed != resume->committed) {
      return FailedPreconditionError("the resumable upload to " + url_ + " holds " +
                                     std::to_string(status->committed) + " bytes but the saved state says " +
                                     std::to_string(resume->committed) + "; start the upload again");
    }
    state = *resume;
  } else {
    SPOOL_ASSIGN_OR_RETURN(state.session_uri,
                           client_->StartResumableUpload(bucket_, MakeNewObject(key_, options_, std::nullopt),
                                                         WritePreconditions()));
  }
  upload_ = std::make_unique<ResumableUpload>(*client_, url_, std::move(state), settings_.resumable);
  if (!buffer_.empty()) {
    Status status = upload_->Append(buffer_);
    buffer_.clear();
    buffer_.shrink_to_fit();
    return status;
  }
  return OkStatus();
}

Status GcsWriterImpl::Append(std::string_view data) {
  if (done_) return FailedPreconditionError("append to " + url_ + " after Close, Abort or Suspend");
  if (upload_) return upload_->Append(data);
  buffer_.append(data);
  if (buffer_.size() > settings_.resumable_threshold) return StartResumable(std::nullopt);
  return OkStatus();
}

uint64_t GcsWriterImpl::bytes_appended() const { return upload_ ? upload_->bytes_appended() : buffer_.size(); }

std::string GcsWriterImpl::session_uri() const { return upload_ ? upload_->session_uri() : std::string(); }

Status GcsWriterImpl::CreateOnlyConflict(const Status& status) const {
  if (options_.if_not_exists && status.code() == StatusCode::kFailedPrecondition &&
      status.remote().http_status == 412) {
    return Status(StatusCode::kAlreadyExists,
                  url_ + " already exists and this write is create-only; delete it first or choose another key")
        .WithRemote(status.remote());
  }
  return status;
}

bool GcsWriterImpl::IsOurs(const ObjectMetadata& stored, uint32_t crc, uint64_t size) const {
  if (stored.size != size || stored.crc32c != crc) return false;
  const std::string content_type = MakeNewObject(key_, options_, crc).content_type;
  return stored.content_type.empty() || stored.content_type == content_type;
}

// The client retries the insert only when it carries a precondition; this
// function adds no retry loop of its own, only explicit reconciliation when
// an attempt's outcome is unknown.
Result<ObjectMetadata> GcsWriterImpl::CommitSmall() {
  const uint32_t crc = crc32c::Value(buffer_);
  const NewObject object = MakeNewObject(key_, options_, crc);
  Preconditions preconditions = WritePreconditions();
  Attempts attempts;
  auto result = client_->InsertObject(bucket_, object, buffer_, preconditions, &attempts);
  if (result.ok()) return result;
  if (!preconditions.if_generation_match && IsRetryable(result.status())) {
    // The one unconditional attempt may or may not have stored the object.
    // If it did not, write once more under a precondition on what is there
    // now, so that the second write cannot replace someone else's newer one
    // and may itself be retried.
    auto current = client_->GetObject(bucket_, key_);
    if (current.ok()) {
      if (IsOurs(*current, crc, buffer_.size())) return *std::move(current);
      preconditions.if_generation_match = current->generation;
    } else if (current.status().code() == StatusCode::kNotFound) {
      preconditions.if_generation_match = 0;
    } else {
      return result.status();
    }
    attempts = Attempts{};
    result = client_->InsertObject(bucket_, object, buffer_, preconditions, &attempts);
    if (result.ok()) return result;
  }
  // A 412 on a repeated conditional insert may answer our own earlier
  // attempt whose success was lost on the way back: the object is ours when
  // it holds exactly what we sent.
  if (result.status().remote().http_status == 412 && attempts.count > 1) {
    auto current = client_->GetObject(bucket_, key_);
    if (current.ok() && IsOurs(*current, crc, buffer_.size())) return *std::move(current);
  }
  return CreateOnlyConflict(result.status());
}

Result<ObjectInfo> GcsWriterImpl::Close() {
  if (done_) return FailedPreconditionError("close " + url_ + " twice, or after Abort or Suspend");
  done_ = true;
  const uint64_t size = bytes_appended();
  // The request that makes the object visible is not cancelled once it has
  // started (its outcome must be known); the cancel is checked before it.
  if (Status cancelled = CancelToken::Current().Check("writing " + url_); !cancelled.ok()) {
    if (upload_) upload_->Cancel().IgnoreError();
    return cancelled;
  }
  Result<ObjectMetadata> stored = [&] {
    CancelScope commit(CancelToken::Process());
    return upload_ ? upload_->Finish() : CommitSmall();
  }();
  if (!stored.ok()) {
    if (upload_) upload_->Cancel().IgnoreError();
    return CreateOnlyConflict(stored.status());
  }
  if (stored->size != size) {
    return DataLossError(url_ + ": the service stored " + std::to_string(stored->size) + " bytes, " +
                         std::to_string(size) + " were written");
  }
  ObjectInfo info = ToObjectInfo(*stored);
  info.key = key_;
  return info;
}

void GcsWriterImpl::Abort() {
  done_ = true;
  buffer_.clear();
  if (upload_) upload_->Cancel().IgnoreError();
}

Result<ResumableUploadState> GcsWriterImpl::Suspend() {
  if (done_) return FailedPreconditionError("suspend " + url_ + " after Close, Abort or Suspend");
  if (!upload_) return FailedPreconditionError(url_ + " is not a resumable write (open it with OpenResumableWrite)");
  done_ = true;
  return upload_->Suspend();
}

}  // namespace spool::gcs
