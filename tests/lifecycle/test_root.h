// The store area the lifecycle exit test works in, and what the harness
// needs of it besides the objects under test: the dataset, per-run scratch
// folders, checks that nothing was left behind, and cleanup.
//
// Layout under the root URL the driver passes (any store: s3://, gs://, a
// local folder):
//   <root>/dataset/train-0000N-of-00008.tfrecord   8 shards of 1 KiB records
//   <root>/dataset/train.manifest.json             written last
//   <root>/scratch/<scenario>/<unique>/...         what one run writes
#pragma once

#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/core/storage/registry.h"
#include "tests/support/bytes.h"

namespace spool::lifecycle {

class TestRoot {
 public:
  static Result<TestRoot> Open(std::string_view url);

  // "<root>/<relative>" as a URL, and as a key of store().
  std::string Url(std::string_view relative) const;
  std::string Key(std::string_view relative) const;
  ObjectStore& store() const { return *location_.store; }
  bool is_local() const { return location_.url.scheme == "file"; }

  // Where the dataset's manifest is (after WriteDataset).
  std::string ManifestUrl() const { return Url("dataset/train.manifest.json"); }
  std::string ManifestKey() const { return Key("dataset/train.manifest.json"); }

  // A folder no other run uses: "scratch/<scenario>/<pid>-<random>".
  std::string NewScratch(std::string_view scenario) const;

  // Creates the bucket where the store needs one made (GCS test server),
  // and writes the dataset unless its manifest exists already.
  Status WriteDataset();

  // OK when nothing of the key is left: the object does not exist, nothing
  // else is under its folder (locally: not even a temporary file), and on
  // S3 no multipart upload of it is pending.
  Status ExpectNothingAt(std::string_view key);
  // OK when no S3 multipart upload is pending under `prefix` (always OK on
  // other stores).
  Status ExpectNoUploads(std::string_view prefix);

  // Deletes every object under the root and aborts S3 multipart uploads
  // left under it (runs that exited mid-upload leave some by design).
  // Prints what it removed.
  Status RemoveAll();

 private:
  explicit TestRoot(StoreLocation location, std::string url) : location_(std::move(location)), url_(std::move(url)) {}

  StoreLocation location_;
  std::string url_;  // without a trailing '/'
};

// Test content (tests/support/bytes.h).
using test_support::DeterministicBytes;

}  // namespace spool::lifecycle
