#include "spool/s3/s3_writer.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "spool/core/cancel.h"
#include "spool/core/crc32c.h"
#include "spool/core/log.h"

namespace spool::s3 {

uint64_t PartSizeFor(int index, uint64_t configured, std::optional<uint64_t> expected_size) {
  if (configured != 0) return configured;
  if (expected_size) return DefaultPartSize(*expected_size);
  return std::min(kDefaultPartSize << std::min(index / 1000, 10), kMaxPartSize);
}

namespace {

// Bytes held under the budget by one part buffer; released when destroyed.
class BudgetHold {
 public:
  BudgetHold() = default;
  BudgetHold(ByteBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
  BudgetHold(BudgetHold&& other) noexcept : budget_(other.budget_), bytes_(std::exchange(other.bytes_, 0)) {}
  BudgetHold& operator=(BudgetHold&& other) noexcept {
    Reset();
    budget_ = other.budget_;
    bytes_ = std::exchange(other.bytes_, 0);
    return *this;
  }
  ~BudgetHold() { Reset(); }
  void Reset() {
    if (bytes_ != 0) budget_->Release(std::exchange(bytes_, 0));
  }

 private:
  ByteBudget* budget_ = nullptr;
  uint64_t bytes_ = 0;
};

class S3Writer : public WritableObject {
 public:
  S3Writer(std::shared_ptr<S3Client> client, std::string key, const WriteOptions& options,
           ConditionalCreateSupport support, Executor& executor, ByteBudget& budget)
      : client_(std::move(client)),
        key_(std::move(key)),
        options_(options),
        support_(support),
        executor_(executor),
        budget_(budget) {}

  ~S3Writer() override {
    if (!closed_) Abort();
  }

  uint64_t bytes_appended() const override { return bytes_appended_; }

  Status Append(std::string_view data) override {
    if (closed_) return FailedPreconditionError("write to " + client_->Describe(key_) + " after Close or Abort");
    SPOOL_RETURN_IF_ERROR(FirstError());
    crc_ = crc32c::Extend(crc_, data.data(), data.size());
    bytes_appended_ += data.size();
    while (!data.empty()) {
      // A full part is sent only once more data follows, so that an object
      // of exactly one part still goes up in a single PUT.
      if (has_part_ && part_.size() == part_size_) SPOOL_RETURN_IF_ERROR(SubmitPart());
      if (!has_part_) StartPart();
      const size_t take = std::min<size_t>(data.size(), part_size_ - part_.size());
      part_.append(data.substr(0, take));
      data.remove_prefix(take);
    }
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
    cancel_.Cancel();  // parts in flight stop within about a second
    AbortUpload();
  }

 private:
  void StartPart() {
    part_size_ = PartSizeFor(part_number_, client_->config().part_size, options_.expected_size);
    lease_ = AcquireBudget(part_size_);
    part_.reserve(part_size_);
    has_part_ = true;
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
      PutOptions put{options_.if_not_exists, options_.content_type};
      auto etag = client_->PutObject(key_, part_, put);
      if (!etag.ok()) return CreateOnlyError(etag.status());
      return Info(*etag);
    }
    if (has_part_ && !part_.empty()) SPOOL_RETURN_IF_ERROR(SubmitPart());
    SPOOL_RETURN_IF_ERROR(WaitForParts(0));
    SPOOL_RETURN_IF_ERROR(FirstError());
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
      PutOptions put{options_.if_not_exists, options_.content_type};
      SPOOL_ASSIGN_OR_RETURN(upload_id_, client_->CreateMultipartUpload(key_, put));
    }
    if (part_number_ >= kMaxParts) {
      return InvalidArgumentError(client_->Describe(key_) + " needs more than 10,000 parts; set a larger part size");
    }
    SPOOL_RETURN_IF_ERROR(WaitForParts(client_->config().concurrency - 1));
    const int number = ++part_number_;
    {
      std::lock_guard lock(mu_);
      ++in_flight_;
      parts_.push_back({number, ""});
    }
    auto body = std::make_shared<std::string>(std::move(part_));
    auto lease = std::make_shared<BudgetHold>(std::move(lease_));
    part_ = std::string();
    has_part_ = false;
    CancelScope scope(cancel_.token());
    executor_.Submit([this, number, body, lease] {
      auto etag = client_->UploadPart(key_, upload_id_, number, *body);
      body->clear();
      lease->Reset();
      std::lock_guard lock(mu_);
      if (etag.ok()) {
        parts_[number - 1].etag = *etag;
      } else if (first_error_.ok()) {
        first_error_ = etag.status();
      }
      --in_flight_;
      done_.notify_all();
    });
    return OkStatus();
  }

  // Takes `bytes` of the budget. The writer may itself run on a pool thread
  // while the parts that would free the budget wait in the pool's queue, so
  // instead of blocking it runs queued tasks until the bytes fit.
  BudgetHold AcquireBudget(uint64_t bytes) {
    bytes = std::min(bytes, budget_.capacity());
    while (true) {
      const uint64_t got = budget_.TryAcquire(bytes);
      if (got != 0) return BudgetHold(&budget_, got);
      if (!executor_.RunOne()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Waits until at most `limit` parts are in flight, running queued executor
  // tasks meanwhile so that a writer on a pool thread cannot deadlock it.
  Status WaitForParts(int limit) {
    std::unique_lock lock(mu_);
    while (in_flight_ > limit) {
      lock.unlock();
      const bool ran = executor_.RunOne();
      lock.lock();
      if (!ran) done_.wait_for(lock, std::chrono::milliseconds(20), [&] { return in_flight_ <= limit; });
    }
    return OkStatus();
  }

  Status FirstError() {
    std::lock_guard lock(mu_);
    return first_error_;
  }

  void AbortUpload() {
    WaitForParts(0).IgnoreError();
    part_ = std::string();
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
  Executor& executor_;
  ByteBudget& budget_;
  CancelSource cancel_;  // the part uploads; cancelled by Abort()

  std::string part_;  // the part being filled
  bool has_part_ = false;
  uint64_t part_size_ = 0;
  BudgetHold lease_;
  std::string upload_id_;
  int part_number_ = 0;
  uint64_t bytes_appended_ = 0;
  uint32_t crc_ = 0;
  bool closed_ = false;

  std::mutex mu_;  // guards what the part tasks touch
  std::condition_variable done_;
  int in_flight_ = 0;
  std::vector<CompletedPart> parts_;
  Status first_error_;
};

}  // namespace

std::unique_ptr<WritableObject> MakeS3Writer(std::shared_ptr<S3Client> client, std::string key,
                                             const WriteOptions& options, ConditionalCreateSupport support,
                                             Executor& executor, ByteBudget& budget) {
  return std::make_unique<S3Writer>(std::move(client), std::move(key), options, support, executor, budget);
}

}  // namespace spool::s3
