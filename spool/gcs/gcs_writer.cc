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
    auto status = Retry(settings_.resumable.retry, Idempotency::kIdempotent, "resume the upload to " + url_,
                        [&] { return client_->QueryUpload(resume->session_uri); });
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

bool GcsWriterImpl::AlreadyStoredByUs(uint32_t crc, uint64_t size, ObjectMetadata* object) {
  auto current = client_->GetObject(bucket_, key_);
  if (!current.ok() || current->size != size || current->crc32c != crc) return false;
  *object = std::move(*current);
  return true;
}

Result<ObjectMetadata> GcsWriterImpl::CommitSmall() {
  const uint32_t crc = crc32c::Value(buffer_);
  const NewObject object = MakeNewObject(key_, options_, crc);
  Preconditions preconditions = WritePreconditions();
  int attempts = 0;
  auto insert = [&] {
    ++attempts;
    return client_->InsertObject(bucket_, object, buffer_, preconditions, Idempotency::kIdempotent);
  };
  auto run = [&](Idempotency idempotency) {
    return Retry(client_->options().retry, idempotency, "write " + url_, insert,
                 client_->options().retry_environment);
  };
  // With a precondition a repeated insert cannot overwrite someone else's
  // object, so it is retried; without one, a failed attempt is first
  // checked, and retried only under a precondition on what is there now.
  const bool conditional = preconditions.if_generation_match.has_value();
  auto result = run(conditional ? Idempotency::kIdempotent : Idempotency::kNonIdempotent);
  ObjectMetadata stored;
  if (!result.ok() && !conditional && IsRetryable(result.status())) {
    if (AlreadyStoredByUs(crc, buffer_.size(), &stored)) return stored;
    auto current = client_->GetObject(bucket_, key_);
    if (current.ok()) {
      preconditions.if_generation_match = current->generation;
    } else if (current.status().code() == StatusCode::kNotFound) {
      preconditions.if_generation_match = 0;
    } else {
      return result.status();
    }
    attempts = 0;
    result = run(Idempotency::kIdempotent);
  }
  if (result.ok()) return result;
  if (result.status().remote().http_status == 412 && attempts > 1 && AlreadyStoredByUs(crc, buffer_.size(), &stored)) {
    return stored;  // an earlier attempt stored it; its answer was lost
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
