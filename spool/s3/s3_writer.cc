#include "spool/s3/s3_writer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "spool/core/buffer_pool.h"
#include "spool/core/cancel.h"
#include "spool/core/crc32c.h"
#include "spool/core/log.h"
#include "spool/core/part_pipeline.h"

namespace spool::s3 {

uint64_t PartSizeFor(int index, uint64_t configured, std::optional<uint64_t> expected_size) {
  if (configured != 0) return configured;
  if (expected_size) return DefaultPartSize(*expected_size);
  return std::min(kDefaultPartSize << std::min(index / 1000, 10), kMaxPartSize);
}

namespace {

constexpr std::string_view kTokenMagic = "s3-multipart/1";

}  // namespace

std::string S3ResumeToken(uint64_t part_size, const std::string& upload_id) {
  return std::string(kTokenMagic) + " " + std::to_string(part_size) + " " + upload_id;
}

bool ParseS3ResumeToken(std::string_view token, uint64_t* part_size, std::string* upload_id) {
  if (!token.starts_with(kTokenMagic) || token.size() <= kTokenMagic.size() + 1) return false;
  token.remove_prefix(kTokenMagic.size() + 1);
  const size_t space = token.find(' ');
  if (space == std::string_view::npos || space + 1 >= token.size()) return false;
  char* end = nullptr;
  const std::string size_text(token.substr(0, space));
  *part_size = std::strtoull(size_text.c_str(), &end, 10);
  if (end == size_text.c_str() || *end != '\0' || *part_size == 0) return false;
  *upload_id = std::string(token.substr(space + 1));
  return upload_id->find_first_of(" \n") == std::string::npos;
}

namespace {

class S3Writer : public WritableObject {
 public:
  S3Writer(std::shared_ptr<S3Client> client, std::string key, const WriteOptions& options,
           ConditionalCreateSupport support, Executor& executor, ByteBudget& budget, S3ResumePlan resume)
      : client_(std::move(client)),
        key_(std::move(key)),
        options_(options),
        support_(support),
        resume_(std::move(resume)),
        upload_id_(resume_.upload_id),
        parts_in_flight_(executor, budget,
                         {.max_in_flight = std::max(client_->config().concurrency, 1),
                          .senders = std::max(client_->config().concurrency, 1)},
                         "writing " + client_->Describe(key_)) {}

  ~S3Writer() override {
    if (!closed_) Abort();
  }

  uint64_t bytes_appended() const override { return bytes_appended_; }

  Status Append(std::string_view data) override {
    if (closed_) return FailedPreconditionError("write to " + client_->Describe(key_) + " after Close or Abort");
    SPOOL_RETURN_IF_ERROR(FirstError());
    while (!data.empty()) {
      SPOOL_ASSIGN_OR_RETURN(std::span<char> room, AppendSpace(data.size()));
      std::memcpy(room.data(), data.data(), room.size());
      SPOOL_RETURN_IF_ERROR(CommitAppend(room.size()));
      data.remove_prefix(room.size());
    }
    return OkStatus();
  }

  // Room at the end of the part being filled. A full part is sent only once
  // more data follows (asking for room says so), so that an object of
  // exactly one part still goes up in a single PUT.
  Result<std::span<char>> AppendSpace(size_t max) override {
    if (closed_) return FailedPreconditionError("write to " + client_->Describe(key_) + " after Close or Abort");
    SPOOL_RETURN_IF_ERROR(FirstError());
    if (has_part_ && part_.size == part_size_) SPOOL_RETURN_IF_ERROR(SubmitPart());
    if (!has_part_) SPOOL_RETURN_IF_ERROR(StartPart());
    return std::span<char>(part_.buffer.data() + part_.size, std::min<size_t>(max, part_size_ - part_.size));
  }

  Status CommitAppend(size_t n) override {
    if (n == 0) return OkStatus();
    if (closed_ || !has_part_ || n > part_size_ - part_.size) {
      return FailedPreconditionError("CommitAppend of " + std::to_string(n) + " bytes to " + client_->Describe(key_) +
                                     " beyond the room AppendSpace gave");
    }
    crc_ = crc32c::Extend(crc_, part_.buffer.data() + part_.size, n);
    bytes_appended_ += n;
    part_.size += n;
    return OkStatus();
  }

  Result<ObjectInfo> Close() override {
    if (closed_) return FailedPreconditionError("Close of " + client_->Describe(key_) + " after Close or Abort");
    Result<ObjectInfo> result = Commit();
    closed_ = true;
    if (!result.ok()) AbortUpload();
    return result;
  }

  void Abort() override {
    if (closed_) return;
    closed_ = true;
    parts_in_flight_.Cancel();  // parts in flight stop within about a second
    AbortUpload();
  }

 private:
  Status StartPart() {
    part_size_ = PartSizeFor(part_number_, client_->config().part_size, options_.expected_size);
    SPOOL_ASSIGN_OR_RETURN(lease_, parts_in_flight_.Reserve(part_size_));
    part_ = Part{DefaultBufferPool().Take(static_cast<size_t>(part_size_)), 0};
    has_part_ = true;
    return OkStatus();
  }

  // Once the request that makes the object visible has started, it is not
  // cancelled: a cancel landing mid-request could leave an object the
  // caller believes aborted. So the cancel is checked just before it.
  Result<ObjectInfo> Commit() {
    const CancelToken cancel = CancelToken::Current();
    const std::string what = "writing " + client_->Describe(key_);
    if (upload_id_.empty()) {
      SPOOL_RETURN_IF_ERROR(cancel.Check(what));
      CancelScope commit(CancelToken::Process());
      SPOOL_RETURN_IF_ERROR(CheckDeclaredCrc32c());
      PutOptions put{options_.if_not_exists, options_.content_type, std::nullopt};
      auto etag = client_->PutObject(key_, part_.view(), put);
      if (!etag.ok()) return CreateOnlyError(etag.status());
      return Info(*etag);
    }
    if (has_part_ && part_.size > 0) SPOOL_RETURN_IF_ERROR(SubmitPart());
    SPOOL_RETURN_IF_ERROR(parts_in_flight_.Drain());
    SPOOL_RETURN_IF_ERROR(CheckDeclaredCrc32c());
    SPOOL_RETURN_IF_ERROR(cancel.Check(what));
    CancelScope commit(CancelToken::Process());
    auto etag = client_->CompleteMultipartUpload(key_, upload_id_, parts_, options_.if_not_exists);
    if (!etag.ok()) return CreateOnlyError(etag.status());
    upload_id_.clear();  // completed: nothing to abort any more
    if (etag->empty()) {  // Ceph RGW answers an empty <ETag>: ask for it
      SPOOL_ASSIGN_OR_RETURN(ObjectInfo head, client_->HeadObject(key_));
      return Info(head.version);
    }
    return Info(*etag);
  }

  // The CRC32C stored at CreateMultipartUpload must be the bytes' own: a
  // source that changed while it was read is not committed.
  Status CheckDeclaredCrc32c() const {
    if (!options_.crc32c || *options_.crc32c == crc_) return OkStatus();
    return DataLossError("writing " + client_->Describe(key_) + ": the bytes appended have CRC32C " +
                         crc32c::ToHex(crc_) + " but the writer was told " + crc32c::ToHex(*options_.crc32c) +
                         " (did the source change while it was read?); nothing was committed");
  }

  // A failed create-only commit names the conflict.
  Status CreateOnlyError(const Status& status) {
    if (options_.if_not_exists && status.code() == StatusCode::kFailedPrecondition &&
        status.remote().http_status == 412) {
      return AlreadyExistsError(client_->Describe(key_) + " exists already (create-only write)")
          .WithRemote(status.remote());
    }
    return status;
  }

  ObjectInfo Info(const std::string& etag) const {
    ObjectInfo info;
    info.key = key_;
    info.size = bytes_appended_;
    info.version = etag;
    info.crc32c = crc_;
    info.updated = std::chrono::system_clock::now();
    return info;
  }

  Status SubmitPart() {
    if (upload_id_.empty()) {
      if (options_.if_not_exists && !support_.complete) {
        return UnimplementedError("create-only write of " + client_->Describe(key_) + ": the S3 server at " +
                                  client_->config().endpoint.ToString() +
                                  " ignores If-None-Match: * on multipart uploads, so create-only objects must "
                                  "fit in one part (" + std::to_string(part_size_) + " bytes); raise the part size");
      }
      // Started, the request must finish: a cancel after the server made the
      // upload would leave one whose id we never learn, so cannot abort.
      SPOOL_RETURN_IF_ERROR(CancelToken::Current().Check("writing " + client_->Describe(key_)));
      CancelScope create(CancelToken::Process());
      PutOptions put{options_.if_not_exists, options_.content_type, options_.crc32c};
      SPOOL_ASSIGN_OR_RETURN(upload_id_, client_->CreateMultipartUpload(key_, put));
      if (resume_.on_token) resume_.on_token(S3ResumeToken(part_size_, upload_id_));
    }
    if (part_number_ >= kMaxParts) {
      return InvalidArgumentError(client_->Describe(key_) + " needs more than 10,000 parts; set a larger part size");
    }
    const int number = ++part_number_;
    {
      std::lock_guard lock(parts_mu_);
      parts_.push_back({number, ""});
    }
    auto body = std::make_shared<Part>(std::move(part_));
    part_ = Part();
    has_part_ = false;
    // Continuing an upload a killed process started: a part the server holds
    // with this size is not sent again.
    if (auto held = resume_.parts.find(number); held != resume_.parts.end() && held->second.size == body->size) {
      lease_.Reset();
      std::lock_guard lock(parts_mu_);
      parts_[static_cast<size_t>(number) - 1].etag = held->second.etag;
      return OkStatus();
    }
    return parts_in_flight_.Submit(std::move(lease_), [this, number, body]() -> Status {
      SPOOL_ASSIGN_OR_RETURN(std::string etag, client_->UploadPart(key_, upload_id_, number, body->view()));
      std::lock_guard lock(parts_mu_);
      parts_[static_cast<size_t>(number) - 1].etag = std::move(etag);
      return OkStatus();
    });
  }

  Status FirstError() { return parts_in_flight_.first_error(); }

  void AbortUpload() {
    parts_in_flight_.Drain().IgnoreError();
    part_ = Part();
    has_part_ = false;
    lease_.Reset();
    if (!upload_id_.empty()) {
      // The abort must reach the server even when this writer's work (or
      // its caller's) was cancelled: only process exit stops it.
      CancelScope cleanup(CancelToken::Process());
      Status aborted = client_->AbortMultipartUpload(key_, upload_id_);
      if (!aborted.ok()) {
        log::Write(log::Level::kInfo, "s3",
                   "could not abort the multipart upload of " + client_->Describe(key_) + " (" +
                       aborted.ToString() + "); a bucket lifecycle rule (AbortIncompleteMultipartUpload) removes it");
      }
      upload_id_.clear();
    }
  }

  const std::shared_ptr<S3Client> client_;
  const std::string key_;
  const WriteOptions options_;
  const ConditionalCreateSupport support_;
  const S3ResumePlan resume_;

  // A part's bytes: a pooled buffer (huge pages; reused once a sent part is
  // done with it) and how much of it is filled.
  struct Part {
    BufferPool::Buffer buffer;
    size_t size = 0;
    std::string_view view() const { return {buffer.data(), size}; }
  };
  Part part_;  // the part being filled
  bool has_part_ = false;
  uint64_t part_size_ = 0;
  ByteBudget::Lease lease_;  // pays for part_
  std::string upload_id_;    // the multipart upload, once started (or continued)
  int part_number_ = 0;
  uint64_t bytes_appended_ = 0;
  uint32_t crc_ = 0;
  bool closed_ = false;

  std::mutex parts_mu_;  // parts_ is filled in by the part uploads
  std::vector<CompletedPart> parts_;
  // Sends the parts; declared last, so destroyed (cancelled and drained)
  // before anything its part uploads use.
  PartPipeline parts_in_flight_;
};

}  // namespace

std::unique_ptr<WritableObject> MakeS3Writer(std::shared_ptr<S3Client> client, std::string key,
                                             const WriteOptions& options, ConditionalCreateSupport support,
                                             Executor& executor, ByteBudget& budget, S3ResumePlan resume) {
  return std::make_unique<S3Writer>(std::move(client), std::move(key), options, support, executor, budget,
                                    std::move(resume));
}

}  // namespace spool::s3
