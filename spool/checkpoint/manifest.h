// The checkpoint manifest: what a committed checkpoint contains.
//
// Stored as <root>/step-000000001234/MANIFEST.json, written last and
// create-only; a step folder without it is not a checkpoint. The JSON is
// protobuf's JSON mapping of spool.checkpoint.proto.Manifest (see
// checkpoint_manifest.proto), for example:
//
//   {"format_version": 1, "step": "1234", "wall_time": "2026-11-22T01:00:00Z",
//    "files": [{"path": "model/weights.bin", "size": "4096", "crc32c": 305419896}],
//    "metadata": {"loader_state": "..."}}
//
// Plain values: copy them freely; all functions are pure and thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"

namespace spool::checkpoint {

// What a single writer writes (world_size 1): files directly in the step folder.
inline constexpr uint32_t kManifestFormatVersion = 1;
// What a job of several ranks writes: each rank's files under
// rank-<5 digits>/, each rank's metadata in `ranks`.
inline constexpr uint32_t kMultiRankManifestFormatVersion = 2;
// The newest version this build reads.
inline constexpr uint32_t kNewestManifestFormatVersion = kMultiRankManifestFormatVersion;

struct CheckpointFile {
  std::string path;  // relative to the step folder, '/'-separated
  uint64_t size = 0;
  uint32_t crc32c = 0;
  // Where the bytes are stored, relative to the same folder as `path`: under
  // the folder of the save attempt that wrote them ("save-<id>/<path>"), so
  // concurrent saves of one step never overwrite each other. Empty: at
  // `path` (manifests written before save folders).
  std::string stored_path = {};

  const std::string& object_path() const { return stored_path.empty() ? path : stored_path; }

  friend bool operator==(const CheckpointFile&, const CheckpointFile&) = default;
};

// One rank's share of a multi-rank checkpoint.
struct CheckpointRankPart {
  int rank = 0;
  std::string attempt;                // which run of the job wrote it
  std::vector<CheckpointFile> files;  // relative to the rank's folder
  std::map<std::string, std::string> metadata;

  uint64_t total_bytes() const;
};

struct CheckpointManifest {
  uint32_t format_version = kManifestFormatVersion;
  int64_t step = 0;
  std::chrono::system_clock::time_point wall_time{};
  // Version 1: every file. Version 2: every rank's files, each path with its
  // rank folder ("rank-00003/model.bin").
  std::vector<CheckpointFile> files;
  // Version 1: the writer's metadata. Version 2: rank 0's.
  std::map<std::string, std::string> metadata;
  // Version 2 only: how many ranks saved, and each one's files and metadata
  // in rank order (world_size entries). Version 1: 1 and empty.
  int world_size = 1;
  std::vector<CheckpointRankPart> ranks;

  uint64_t total_bytes() const;
};

// What one rank of a multi-rank save writes once its files are confirmed.
struct CheckpointPart {
  int64_t step = 0;
  int world_size = 1;
  std::chrono::system_clock::time_point wall_time{};
  CheckpointRankPart part;
};

// "0x1a2b3c4d": how messages show a crc32c.
std::string FormatCrc32c(uint32_t crc);

// The manifest as JSON (indented, stable field order).
Result<std::string> EncodeManifest(const CheckpointManifest& manifest);

// Parses and validates a manifest read from `where` (a URL, for messages):
// DataLoss if it is not a manifest, FailedPrecondition if its format version
// is newer than this build knows, InvalidArgument if a file path is unsafe
// (see ValidateCheckpointPath) or listed twice. Unknown fields are ignored.
Result<CheckpointManifest> DecodeManifest(std::string_view json, std::string_view where);

// A rank's part as JSON, and back (validated like a manifest: DataLoss if
// it is not a part, InvalidArgument for unsafe paths or a rank outside
// [0, world_size)).
Result<std::string> EncodePart(const CheckpointPart& part);
Result<CheckpointPart> DecodePart(std::string_view json, std::string_view where);

// OK when `path` is a safe relative file path inside a checkpoint: not
// empty, '/'-separated, no empty, "." or ".." segment, not absolute, no
// backslash, NUL or other control character, not the reserved top-level
// MANIFEST.json. InvalidArgument naming the path otherwise.
Status ValidateCheckpointPath(std::string_view path);

// Checks a whole file list: every path valid, no path listed twice, and no
// file that is also a folder of another ("a" and "a/b").
Status ValidateCheckpointFiles(const std::vector<CheckpointFile>& files);

}  // namespace spool::checkpoint
