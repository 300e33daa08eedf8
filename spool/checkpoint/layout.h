// Where a checkpoint's objects live under a root prefix:
//
//   <root>/step-000000001234/<relative path>   the files
//   <root>/step-000000001234/MANIFEST.json     written last: the commit
//   <root>/LATEST                              optional hint: the newest step
//
// Steps are zero-padded to 12 digits so listings sort numerically; larger
// steps still parse. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spool {

class CheckpointLayout {
 public:
  // `root` is a key prefix inside the store ("" for the bucket root); a
  // trailing '/' is ignored.
  explicit CheckpointLayout(std::string_view root);

  const std::string& root() const { return root_; }
  // "<root>/step-000000001234/"
  std::string StepPrefix(int64_t step) const;
  // "<root>/step-000000001234/<path>"
  std::string FileKey(int64_t step, std::string_view path) const;
  std::string ManifestKey(int64_t step) const;
  std::string LatestHintKey() const;
  // What to List() with delimiter '/' to see the step folders.
  std::string ListPrefix() const;

  // The step of a listed folder ("<root>/step-000000001234/"), or nullopt
  // for anything else under the root.
  std::optional<int64_t> ParseStepPrefix(std::string_view prefix) const;

 private:
  std::string Child(std::string_view name) const;
  std::string root_;
};

}  // namespace spool
