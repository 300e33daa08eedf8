#include "spool/gcs/resumable_upload.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <utility>

#include "spool/core/crc32c.h"
#include "spool/core/large_buffer.h"

namespace spool::gcs {

std::string ResumableUploadState::Serialize() const {
  return "spool-gcs-resumable-v1 " + std::to_string(committed) + " " + std::to_string(crc32c) + " " + session_uri;
}

Result<ResumableUploadState> ResumableUploadState::Parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string magic;
  ResumableUploadState state;
  if (!(in >> magic >> state.committed >> state.crc32c >> state.session_uri) || magic != "spool-gcs-resumable-v1") {
    return InvalidArgumentError("not a saved GCS resumable upload (expected \"spool-gcs-resumable-v1 ...\")");
  }
  return state;
}

ResumableUpload::ResumableUpload(GcsClient& client, std::string url, ResumableUploadState state,
                                 ResumableUploadOptions options)
    : client_(client),
      url_(std::move(url)),
      session_uri_(std::move(state.session_uri)),
      options_(options),
      chunk_size_(std::max(kChunkGranularity, options.chunk_size / kChunkGranularity * kChunkGranularity)),
      fill_begin_(state.committed),
      crc_all_(state.crc32c),
      crc_handed_(state.crc32c),
      committed_(state.committed),
      // One sender: a session takes its bytes in order.
      chunks_(options.executor ? *options.executor : DefaultExecutor(),
              options.budget ? *options.budget : DefaultByteBudget(),
              {.max_in_flight = std::max(options.chunks_in_flight, 1), .senders = 1}, "upload of " + url_) {}

ResumableUpload::~ResumableUpload() {
  chunks_.Cancel();
  chunks_.Drain().IgnoreError();
}

Status ResumableUpload::StartFill() {
  if (fill_lease_.bytes() > 0) return OkStatus();
  // Reserve never blocks the pool: while the budget is exhausted (perhaps
  // by this upload's own chunks) it runs queued tasks or waits for a chunk
  // to be confirmed.
  SPOOL_ASSIGN_OR_RETURN(fill_lease_, chunks_.Reserve(chunk_size_));
  fill_.reserve(chunk_size_);
  AdviseHugePages(fill_.data(), chunk_size_);  // before the appends touch it
  return OkStatus();
}

Status ResumableUpload::Append(std::string_view data) {
  if (finished_) return FailedPreconditionError("append to " + url_ + " after it was finished or suspended");
  SPOOL_RETURN_IF_ERROR(chunks_.first_error());
  crc_all_ = crc32c::Extend(crc_all_, data.data(), data.size());
  while (!data.empty()) {
    if (fill_.empty()) SPOOL_RETURN_IF_ERROR(StartFill());
    const size_t n = std::min<size_t>(data.size(), chunk_size_ - fill_.size());
    fill_.append(data.data(), n);
    data.remove_prefix(n);
    if (fill_.size() == chunk_size_) SPOOL_RETURN_IF_ERROR(HandOver(fill_.size()));
  }
  return OkStatus();
}

Status ResumableUpload::HandOver(size_t bytes) {
  auto chunk = std::make_shared<Chunk>();
  chunk->begin = fill_begin_;
  if (bytes == fill_.size()) {
    chunk->data = std::move(fill_);
    fill_.clear();
  } else {
    chunk->data.assign(fill_, 0, bytes);
    fill_.erase(0, bytes);
  }
  crc_handed_ = crc32c::Extend(crc_handed_, chunk->data.data(), chunk->data.size());
  fill_begin_ += bytes;
  // The lease goes with the chunk: the part of the fill left over (Suspend)
  // is not appended to again.
  return chunks_.Submit(std::move(fill_lease_),
                        [this, chunk] { return SendChunk(*chunk, /*last=*/false, std::nullopt); });
}

Status ResumableUpload::SendChunk(const Chunk& chunk, bool last, std::optional<uint32_t> crc) {
  const uint64_t end = chunk.begin + chunk.data.size();
  const std::optional<uint64_t> total = last ? std::optional<uint64_t>(end) : std::nullopt;
  bool ask_first = false;
  auto record = [&](const UploadStatus& status) {
    std::lock_guard lock(mu_);
    committed_ = status.committed;
    if (status.object) object_ = status.object;
  };
  auto progress = [&] {
    std::lock_guard lock(mu_);
    return std::make_pair(committed_, object_.has_value());
  };
  const std::string what = "upload bytes " + std::to_string(chunk.begin) + "-" + std::to_string(end) + " of " + url_;
  // The resumable protocol makes resending safe: the session says what it
  // has, and only the rest is sent again.
  // Through the client's throttle (core/throttle.h), like every other exchange.
  Status status = RetryThrottled(
      options_.retry.policy, Idempotency::kIdempotent, what,
      [&]() -> Status {
        if (ask_first) {
          SPOOL_ASSIGN_OR_RETURN(UploadStatus queried, client_.QueryUpload(session_uri_, total));
          record(queried);
          ask_first = false;
        }
        for (;;) {
          auto [committed, done] = progress();
          if (done || (!last && committed >= end)) return OkStatus();
          if (committed < chunk.begin) {
            return DataLossError("the upload session of " + url_ + " holds " + std::to_string(committed) +
                                 " bytes, fewer than the " + std::to_string(chunk.begin) +
                                 " it confirmed before; start the upload again");
          }
          auto answer =
              client_.UploadChunk(session_uri_, committed, std::string_view(chunk.data).substr(committed - chunk.begin),
                                  total, last ? crc : std::nullopt);
          if (!answer.ok()) {
            ask_first = true;
            return answer.status();
          }
          record(*answer);
          if (last && !answer->object && answer->committed == end && committed == end) {
            return InternalError(url_ + ": the session has every byte but did not commit the object");
          }
        }
      },
      options_.retry.environment, client_.options().throttle.get());
  if (status.code() == StatusCode::kFailedPrecondition && status.remote().http_status == 410) {
    return Status(status.code(), url_ + ": the resumable upload session expired or was cancelled; start the "
                                        "upload again (" + status.message() + ")")
        .WithRemote(status.remote());
  }
  return status;
}

Result<ObjectMetadata> ResumableUpload::Finish() {
  if (finished_) return FailedPreconditionError("finish " + url_ + " twice");
  finished_ = true;
  SPOOL_RETURN_IF_ERROR(chunks_.Drain());
  Chunk last;
  last.begin = fill_begin_;
  last.data = std::move(fill_);
  SPOOL_RETURN_IF_ERROR(SendChunk(last, /*last=*/true, crc_all_));
  fill_lease_.Reset();
  std::lock_guard lock(mu_);
  if (!object_) return InternalError(url_ + ": the upload ended without an object");
  return *object_;
}

Result<ResumableUploadState> ResumableUpload::Suspend() {
  if (finished_) return FailedPreconditionError("suspend " + url_ + " after it was finished");
  finished_ = true;
  const size_t whole = fill_.size() / kChunkGranularity * kChunkGranularity;
  if (whole > 0) HandOver(whole).IgnoreError();  // Drain reports the error
  SPOOL_RETURN_IF_ERROR(chunks_.Drain());
  fill_lease_.Reset();
  std::lock_guard lock(mu_);
  return ResumableUploadState{session_uri_, committed_, crc_handed_};
}

Status ResumableUpload::Cancel() {
  finished_ = true;
  chunks_.Cancel();
  chunks_.Drain().IgnoreError();
  fill_lease_.Reset();
  CancelScope cleanup(CancelToken::Process());
  return client_.CancelUpload(session_uri_);
}

}  // namespace spool::gcs
