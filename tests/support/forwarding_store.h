// The base of every test double that wraps a store: ForwardingStore passes
// each ObjectStore call to the store it wraps, so a double overrides only
// the calls it changes and everything else behaves as the wrapped store
// does (a wrapper that forgot Copy or OpenListed would make the code under
// test take another path than it takes on the real store).
//
// forwarding_store_test.cc fails when ObjectStore gains a virtual method that
// is not forwarded here: add the forward when you add the method.
//
// Which calls reach an object by another road, to keep in mind when
// overriding one of them:
// - OpenRead and OpenListed both open a reader (transfers open what a
//   listing described with OpenListed);
// - OpenWrite and OpenResumableUpload both open a writer (uploads to a store
//   with resumable_uploads() use OpenResumableUpload);
// - Delete and DeleteMany both delete;
// - Copy writes `to_key` on the server, without OpenWrite.
// A double that injects a fault into one of a pair usually wants it in the
// other too.
//
// Counters: the wrapper shares the wrapped store's RequestCounters, so
// counters() of either shows the same requests.
//
// Thread-safe as the wrapped store is; a subclass's own state is its own to
// guard.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/storage/object_store.h"

namespace spool::test_support {

class ForwardingStore : public ObjectStore {
 public:
  // `inner` must not be null.
  explicit ForwardingStore(std::shared_ptr<ObjectStore> inner);

  ObjectStore& inner() const { return *inner_; }
  const std::shared_ptr<ObjectStore>& shared_inner() const { return inner_; }

  std::string Describe(std::string_view key) const override;
  Result<ObjectInfo> Stat(std::string_view key) override;
  Result<ListPage> List(const ListOptions& options) override;
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override;
  Result<std::unique_ptr<ReadableObject>> OpenListed(const ObjectInfo& listed) override;
  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key, const WriteOptions& options = {}) override;
  Status Delete(std::string_view key) override;
  Result<std::vector<DeleteFailure>> DeleteMany(const std::vector<std::string>& keys) override;
  Result<ObjectInfo> Copy(std::string_view from_key, std::string_view to_key) override;
  Result<std::unique_ptr<WritableObject>> OpenResumableUpload(std::string_view key, const WriteOptions& options,
                                                              const ResumeOptions& resume) override;
  bool resumable_uploads() const override;
  Status DiscardResumableUpload(std::string_view key, const std::string& token) override;
  Result<std::vector<IncompleteUpload>> ListIncompleteUploads(std::string_view prefix) override;
  Status AbortIncompleteUpload(const IncompleteUpload& upload) override;
  StoreAccess Access() const override;
  Result<StoreIdentity> WhoAmI() override;
  Status CreateBucket(const BucketOptions& options) override;

 private:
  std::shared_ptr<ObjectStore> inner_;
};

}  // namespace spool::test_support
