#include "tests/lifecycle/test_root.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "spool/records/sharded_writer.h"
#include "spool/backends_config.h"
#if SPOOL_HAVE_S3
#include "spool/s3/s3_store.h"
#endif
#if SPOOL_HAVE_GCS
#include "spool/gcs/gcs_store.h"
#endif

namespace spool::lifecycle {
namespace {

// 8 shards of 2 MiB: big enough that a loader's read-ahead is still
// running when the harness returns, small enough to write once quickly.
constexpr int kShards = 8;
constexpr uint64_t kRecords = 16384;
constexpr size_t kRecordBytes = 1024;

#if SPOOL_HAVE_S3
s3::S3Store* AsS3(ObjectStore& store) { return dynamic_cast<s3::S3Store*>(&store); }
#endif

}  // namespace

Result<TestRoot> TestRoot::Open(std::string_view url) {
  std::string trimmed(url);
  while (!trimmed.empty() && trimmed.back() == '/') trimmed.pop_back();
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, OpenLocation(trimmed));
  // RemoveAll deletes everything under the root: never a whole bucket or /.
  if (location.key.empty()) {
    return InvalidArgumentError("the test root " + std::string(url) + " must be a folder, not a bucket or /");
  }
  return TestRoot(std::move(location), std::move(trimmed));
}

std::string TestRoot::Url(std::string_view relative) const { return url_ + "/" + std::string(relative); }

std::string TestRoot::Key(std::string_view relative) const { return JoinKey(location_.key, relative); }

std::string TestRoot::NewScratch(std::string_view scenario) const {
  // The pid alone is not enough: pids are reused over hundreds of runs.
  std::random_device random;
  return "scratch/" + std::string(scenario) + "/" + std::to_string(::getpid()) + "-" + std::to_string(random());
}

Status TestRoot::WriteDataset() {
#if SPOOL_HAVE_GCS
  if (auto* gcs = dynamic_cast<gcs::GcsStore*>(location_.store.get())) {
    Status made = gcs->client().InsertBucket(gcs->bucket(), "spool-lifecycle-test");
    if (!made.ok() && made.code() != StatusCode::kAlreadyExists) return made;
  }
#endif
  if (store().Stat(ManifestKey()).ok()) return OkStatus();
  records::ShardedWriterOptions options;
  options.num_shards = kShards;
  SPOOL_ASSIGN_OR_RETURN(auto writer, records::ShardedWriter::Open(store(), Key("dataset/train"), options));
  for (uint64_t i = 0; i < kRecords; ++i) SPOOL_RETURN_IF_ERROR(writer->Write(DeterministicBytes(i, kRecordBytes)));
  return writer->Close().status();
}

Status TestRoot::ExpectNoUploads(std::string_view prefix) {
#if SPOOL_HAVE_S3
  if (s3::S3Store* s3 = AsS3(store())) {
    SPOOL_ASSIGN_OR_RETURN(auto page, s3->client().ListMultipartUploads(prefix, "", ""));
    if (!page.uploads.empty()) {
      return FailedPreconditionError(std::to_string(page.uploads.size()) + " multipart upload(s) still pending under " +
                                     store().Describe(prefix) + ", e.g. of " + page.uploads.front().key);
    }
  }
#else
  (void)prefix;
#endif
  return OkStatus();
}

Status TestRoot::ExpectNothingAt(std::string_view key) {
  const std::string url = store().Describe(key);
  Result<ObjectInfo> stat = store().Stat(key);
  if (stat.ok()) return FailedPreconditionError(url + " exists, but its writer was destroyed without Close");
  if (stat.status().code() != StatusCode::kNotFound) return stat.status();

  const std::string folder = std::string(key.substr(0, key.rfind('/') + 1));
  if (is_local()) {
    // Temporary files are not listed by the store: look at the folder itself.
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/" + folder, error)) {
      return FailedPreconditionError(entry.path().string() + " was left behind by a destroyed writer");
    }
  } else {
    ListOptions options;
    options.prefix = folder;
    SPOOL_ASSIGN_OR_RETURN(ListPage page, store().List(options));
    if (!page.objects.empty()) {
      return FailedPreconditionError(store().Describe(page.objects.front().key) +
                                     " was left behind by a destroyed writer");
    }
  }
  return ExpectNoUploads(key);
}

Status TestRoot::RemoveAll() {
  ListOptions options;
  options.prefix = location_.key + "/";
  SPOOL_ASSIGN_OR_RETURN(ListPage all, ListAll(store(), options));
  std::vector<std::string> keys;
  for (const ObjectInfo& object : all.objects) keys.push_back(object.key);
  SPOOL_ASSIGN_OR_RETURN(std::vector<DeleteFailure> failed, store().DeleteMany(keys));
  if (!failed.empty()) return failed.front().status;
  // Older than 0 s: every upload under the root, whoever started it.
  SPOOL_ASSIGN_OR_RETURN(std::vector<IncompleteUpload> aborted,
                         AbortIncompleteUploads(store(), options.prefix, std::chrono::seconds(0)));
  std::printf("removed %zu objects and %zu pending multipart uploads under %s\n", keys.size(), aborted.size(),
              url_.c_str());
  return OkStatus();
}

}  // namespace spool::lifecycle
