// The defaults of ObjectStore and the whole-object conveniences.
#include "spool/core/storage/object_store.h"

#include <pwd.h>
#include <unistd.h>

#include <utility>

#include "spool/core/retry.h"

namespace spool {

Result<std::unique_ptr<WritableObject>> ObjectStore::OpenResumableUpload(std::string_view key,
                                                                         const WriteOptions& options,
                                                                         const ResumeOptions& /*resume*/) {
  return OpenWrite(key, options);
}

Status ObjectStore::DiscardResumableUpload(std::string_view /*key*/, const std::string& /*token*/) {
  return OkStatus();
}

void ObjectStore::UseCounters(std::shared_ptr<RequestCounters> counters) {
  if (counters) counters_ = std::move(counters);
}

Result<std::vector<DeleteFailure>> ObjectStore::DeleteMany(const std::vector<std::string>& keys) {
  std::vector<DeleteFailure> failures;
  for (const std::string& key : keys) {
    Status status = Delete(key);
    if (!status.ok()) failures.push_back({key, std::move(status)});
  }
  return failures;
}

Result<std::unique_ptr<ReadableObject>> ObjectStore::OpenListed(const ObjectInfo& listed) {
  return OpenRead(listed.key);
}

Result<ObjectInfo> ObjectStore::Copy(std::string_view from_key, std::string_view to_key) {
  return UnimplementedError("server-side copy from " + Describe(from_key) + " to " + Describe(to_key) +
                            " is not supported by this store; copy through spool::CopyObject instead");
}

Result<std::vector<IncompleteUpload>> ObjectStore::ListIncompleteUploads(std::string_view prefix) {
  (void)prefix;
  return std::vector<IncompleteUpload>{};
}

Status ObjectStore::AbortIncompleteUpload(const IncompleteUpload& upload) {
  return UnimplementedError("this store keeps no incomplete uploads; cannot abort " + upload.id + " of " +
                            Describe(upload.key));
}

Result<StoreIdentity> ObjectStore::WhoAmI() {
  StoreIdentity identity;
  const uid_t uid = ::geteuid();
  const struct passwd* user = ::getpwuid(uid);
  identity.identity = "uid " + std::to_string(uid) + (user ? " (" + std::string(user->pw_name) + ")" : "");
  identity.source = "file permissions of the process";
  return identity;
}

Status ObjectStore::CreateBucket(const BucketOptions& /*options*/) {
  return UnimplementedError(Describe("") + " has no buckets to create");
}

Result<std::vector<IncompleteUpload>> AbortIncompleteUploads(ObjectStore& store, std::string_view prefix,
                                                             std::chrono::seconds older_than, bool dry_run) {
  const auto cutoff = std::chrono::system_clock::now() - older_than;
  SPOOL_ASSIGN_OR_RETURN(std::vector<IncompleteUpload> uploads, store.ListIncompleteUploads(prefix));
  std::erase_if(uploads, [&](const IncompleteUpload& upload) { return upload.started > cutoff; });
  if (dry_run) return uploads;
  for (const IncompleteUpload& upload : uploads) {
    SPOOL_RETURN_IF_ERROR(store.AbortIncompleteUpload(upload).WithContext(
        "aborting the incomplete upload of " + store.Describe(upload.key)));
  }
  return uploads;
}

namespace {

Result<std::string> ReadWhole(ObjectStore& store, std::string_view key, std::unique_ptr<ReadableObject> object) {
  std::string data(object->info().size, '\0');
  size_t filled = 0;
  while (filled < data.size()) {
    SPOOL_ASSIGN_OR_RETURN(size_t n, object->ReadAt(filled, std::span<char>(data).subspan(filled)));
    if (n == 0) {
      return DataLossError(store.Describe(key) + ": object ended at byte " + std::to_string(filled) +
                           " but its size is " + std::to_string(data.size()));
    }
    filled += n;
  }
  return data;
}

}  // namespace

Result<std::string> ReadAll(ObjectStore& store, std::string_view key) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> object, store.OpenRead(key));
  return ReadWhole(store, key, std::move(object));
}

Result<std::string> ReadAll(ObjectStore& store, const ObjectInfo& listed) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> object, store.OpenListed(listed));
  return ReadWhole(store, listed.key, std::move(object));
}

Result<ObjectInfo> WriteAll(ObjectStore& store, std::string_view key, std::string_view data,
                            const WriteOptions& options) {
  WriteOptions sized = options;
  if (!sized.expected_size) sized.expected_size = data.size();
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<WritableObject> writer, store.OpenWrite(key, sized));
  SPOOL_RETURN_IF_ERROR(writer->Append(data));
  return writer->Close();
}

Result<ListPage> ListAll(ObjectStore& store, ListOptions options) {
  ListPage all;
  do {
    SPOOL_ASSIGN_OR_RETURN(ListPage page, store.List(options));
    for (ObjectInfo& info : page.objects) all.objects.push_back(std::move(info));
    for (std::string& prefix : page.common_prefixes) all.common_prefixes.push_back(std::move(prefix));
    for (SkippedEntry& skipped : page.skipped) all.skipped.push_back(std::move(skipped));
    options.page_token = std::move(page.next_page_token);
  } while (!options.page_token.empty());
  return all;
}

}  // namespace spool
