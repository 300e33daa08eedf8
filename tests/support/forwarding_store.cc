#include "tests/support/forwarding_store.h"

#include <utility>

namespace spool::test_support {

ForwardingStore::ForwardingStore(std::shared_ptr<ObjectStore> inner) : inner_(std::move(inner)) {
  UseCounters(inner_->shared_counters());
}

std::string ForwardingStore::Describe(std::string_view key) const { return inner_->Describe(key); }

Result<ObjectInfo> ForwardingStore::Stat(std::string_view key) { return inner_->Stat(key); }

Result<ListPage> ForwardingStore::List(const ListOptions& options) { return inner_->List(options); }

Result<std::unique_ptr<ReadableObject>> ForwardingStore::OpenRead(std::string_view key) {
  return inner_->OpenRead(key);
}

Result<std::unique_ptr<ReadableObject>> ForwardingStore::OpenListed(const ObjectInfo& listed) {
  return inner_->OpenListed(listed);
}

Result<std::unique_ptr<WritableObject>> ForwardingStore::OpenWrite(std::string_view key, const WriteOptions& options) {
  return inner_->OpenWrite(key, options);
}

Status ForwardingStore::Delete(std::string_view key) { return inner_->Delete(key); }

Result<std::vector<DeleteFailure>> ForwardingStore::DeleteMany(const std::vector<std::string>& keys) {
  return inner_->DeleteMany(keys);
}

Result<ObjectInfo> ForwardingStore::Copy(std::string_view from_key, std::string_view to_key) {
  return inner_->Copy(from_key, to_key);
}

Result<std::unique_ptr<WritableObject>> ForwardingStore::OpenResumableUpload(std::string_view key,
                                                                             const WriteOptions& options,
                                                                             const ResumeOptions& resume) {
  return inner_->OpenResumableUpload(key, options, resume);
}

bool ForwardingStore::resumable_uploads() const { return inner_->resumable_uploads(); }

Status ForwardingStore::DiscardResumableUpload(std::string_view key, const std::string& token) {
  return inner_->DiscardResumableUpload(key, token);
}

Result<std::vector<IncompleteUpload>> ForwardingStore::ListIncompleteUploads(std::string_view prefix) {
  return inner_->ListIncompleteUploads(prefix);
}

Status ForwardingStore::AbortIncompleteUpload(const IncompleteUpload& upload) {
  return inner_->AbortIncompleteUpload(upload);
}

StoreAccess ForwardingStore::Access() const { return inner_->Access(); }

Result<StoreIdentity> ForwardingStore::WhoAmI() { return inner_->WhoAmI(); }

Status ForwardingStore::CreateBucket(const BucketOptions& options) { return inner_->CreateBucket(options); }

}  // namespace spool::test_support
