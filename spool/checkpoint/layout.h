// Where a checkpoint's objects live under a root prefix:
//
//   <root>/step-000000001234/<relative path>   the files
//   <root>/step-000000001234/MANIFEST.json     written last: the commit
//   <root>/LATEST                              optional hint: the newest step
//
// A checkpoint of several ranks (format_version 2) puts each rank's files in
// a folder of its own and, once they are confirmed, a part manifest:
//
//   <root>/step-000000001234/rank-00003/<relative path>
//   <root>/step-000000001234/parts/rank-00003.json
//   <root>/COMMITTER                           written by rank 0 when it starts
//
// With rank prefix fan-out N > 1 (CheckpointOptions::rank_prefix_fanout),
// rank R's files go one folder deeper, under one of N hex labels
// (spool::FanoutLabel(R, N), spool/core/key_fanout.h), so that 1,000 ranks
// saving at once spread their PUTs over N key prefixes:
//
//   <root>/step-000000001234/3f/rank-00003/<relative path>
//
// The manifest's `path` stays "rank-00003/<relative path>"; its
// `stored_path` names the object, so restore, verify and gc need no option.
//
// Steps are zero-padded to 12 digits so listings sort numerically; larger
// steps still parse. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spool::checkpoint {

class CheckpointLayout {
 public:
  // `root` is a key prefix inside the store ("" for the bucket root); a
  // trailing '/' is ignored.
  explicit CheckpointLayout(std::string_view root, int rank_prefix_fanout = 0);

  const std::string& root() const { return root_; }
  // "<root>/step-000000001234/"
  std::string StepPrefix(int64_t step) const;
  // "<root>/step-000000001234/<path>"
  std::string FileKey(int64_t step, std::string_view path) const;
  std::string ManifestKey(int64_t step) const;
  std::string LatestHintKey() const;
  // "rank-00003": the folder of a rank's files inside the step folder.
  static std::string RankFolder(int rank);
  // "save-0123456789abcdef/": the folder one save attempt uploads its files
  // under, inside the step folder (or the rank's folder), so that two
  // writers of the same step never overwrite each other's files.
  static std::string SaveFolder(uint64_t save_id);
  // Where a rank's files are stored, relative to the step folder:
  // "rank-00003", or with fan-out "3f/rank-00003".
  std::string RankStoredFolder(int rank) const;
  // "<root>/step-000000001234/" + RankStoredFolder(rank) + "/"
  std::string RankPrefix(int64_t step, int rank) const;
  // "<root>/step-000000001234/parts/" and ".../parts/rank-00003.json"
  std::string PartsPrefix(int64_t step) const;
  std::string PartKey(int64_t step, int rank) const;
  // The rank of a key listed under PartsPrefix(step), or nullopt.
  std::optional<int> ParsePartKey(int64_t step, std::string_view key) const;
  // Written by the committing rank when it starts: parts older than it are
  // from an earlier run of the job.
  std::string CommitterMarkerKey() const;

  // What to List() with delimiter '/' to see the step folders.
  std::string ListPrefix() const;

  // The step of a listed folder ("<root>/step-000000001234/"), or nullopt
  // for anything else under the root.
  std::optional<int64_t> ParseStepPrefix(std::string_view prefix) const;

 private:
  std::string Child(std::string_view name) const;
  std::string root_;
  int rank_prefix_fanout_ = 0;
};

}  // namespace spool::checkpoint
