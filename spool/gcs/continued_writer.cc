#include "spool/gcs/continued_writer.h"

#include <algorithm>

#include "spool/core/cancel.h"
#include "spool/core/crc32c.h"

namespace spool::gcs {
namespace {

constexpr std::string_view kTokenMagic = "gcs-session/1 ";

class ContinuedWriter : public WritableObject {
 public:
  ContinuedWriter(GcsStore& store, std::string key, std::string session_uri, uint64_t committed)
      : store_(store), key_(std::move(key)), session_uri_(std::move(session_uri)), committed_(committed) {}
  ~ContinuedWriter() override {
    if (!done_) Abort();
  }

  Status Append(std::string_view data) override {
    if (done_) return FailedPreconditionError("write to " + store_.Describe(key_) + " after Close or Abort");
    // The bytes the session holds: checksummed, not sent.
    const size_t held = static_cast<size_t>(std::min<uint64_t>(data.size(), committed_ - skipped_));
    if (held > 0) {
      crc_ = crc32c::Extend(crc_, data.data(), held);
      skipped_ += held;
      data.remove_prefix(held);
    }
    if (data.empty() && skipped_ < committed_) return OkStatus();
    SPOOL_RETURN_IF_ERROR(StartRest());
    return data.empty() ? OkStatus() : rest_->Append(data);
  }

  Result<ObjectInfo> Close() override {
    if (done_) return FailedPreconditionError("Close of " + store_.Describe(key_) + " after Close or Abort");
    if (skipped_ < committed_) {
      Abort();
      return FailedPreconditionError(store_.Describe(key_) + ": the upload being continued holds " +
                                     std::to_string(committed_) + " bytes but only " + std::to_string(skipped_) +
                                     " were appended; the source changed, start the upload again");
    }
    SPOOL_RETURN_IF_ERROR(StartRest());
    done_ = true;
    return rest_->Close();
  }

  void Abort() override {
    if (done_) return;
    done_ = true;
    if (rest_) return rest_->Abort();  // cancels the session
    CancelScope cleanup(CancelToken::Process());
    store_.client().CancelUpload(session_uri_).IgnoreError();
  }

  uint64_t bytes_appended() const override { return rest_ ? rest_->bytes_appended() : skipped_; }

 private:
  Status StartRest() {
    if (rest_) return OkStatus();
    ResumableUploadState state{session_uri_, committed_, crc_};
    SPOOL_ASSIGN_OR_RETURN(rest_, store_.ResumeWrite(key_, state));
    return OkStatus();
  }

  GcsStore& store_;
  const std::string key_;
  const std::string session_uri_;
  const uint64_t committed_;
  uint64_t skipped_ = 0;
  uint32_t crc_ = 0;  // of the skipped bytes
  std::unique_ptr<GcsWriter> rest_;
  bool done_ = false;
};

}  // namespace

std::string GcsResumeToken(const std::string& session_uri) { return std::string(kTokenMagic) + session_uri; }

std::string SessionOfGcsResumeToken(std::string_view token) {
  if (!token.starts_with(kTokenMagic) || token.size() == kTokenMagic.size()) return "";
  return std::string(token.substr(kTokenMagic.size()));
}

std::unique_ptr<WritableObject> MakeContinuedWriter(GcsStore& store, std::string key, std::string session_uri,
                                                    uint64_t committed) {
  return std::make_unique<ContinuedWriter>(store, std::move(key), std::move(session_uri), committed);
}

}  // namespace spool::gcs
