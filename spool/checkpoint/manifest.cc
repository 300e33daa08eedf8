#include "spool/checkpoint/manifest.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <set>

#include "spool/checkpoint/checkpoint_manifest.pb.h"
#include "spool/core/crc32c.h"

namespace spool::checkpoint {
namespace {

uint64_t TotalBytes(const std::vector<CheckpointFile>& files) {
  uint64_t total = 0;
  for (const CheckpointFile& file : files) total += file.size;
  return total;
}

namespace pb = spool::checkpoint::proto;
using google::protobuf::util::TimeUtil;

constexpr std::string_view kReservedName = "MANIFEST.json";

int64_t ToNanos(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point FromNanos(int64_t nanos) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(nanos)));
}

// Quotes a path for a message, making control characters visible.
std::string Quote(std::string_view path) {
  std::string out = "'";
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

void ToProto(const CheckpointFile& file, pb::ManifestFile* entry) {
  entry->set_path(file.path);
  entry->set_size(file.size);
  entry->set_crc32c(file.crc32c);
  entry->set_stored_path(file.stored_path);
}

CheckpointFile FromProto(const pb::ManifestFile& entry) {
  return CheckpointFile{entry.path(), entry.size(), entry.crc32c(), entry.stored_path()};
}

void ToProto(const CheckpointRankPart& part, pb::RankPart* message) {
  message->set_rank(static_cast<uint32_t>(part.rank));
  message->set_attempt(part.attempt);
  for (const CheckpointFile& file : part.files) ToProto(file, message->add_files());
  for (const auto& [key, value] : part.metadata) (*message->mutable_metadata())[key] = value;
}

CheckpointRankPart FromProto(const pb::RankPart& message) {
  CheckpointRankPart part;
  part.rank = static_cast<int>(message.rank());
  part.attempt = message.attempt();
  for (const pb::ManifestFile& entry : message.files()) part.files.push_back(FromProto(entry));
  for (const auto& [key, value] : message.metadata()) part.metadata[key] = value;
  return part;
}

Result<std::string> ToJson(const google::protobuf::Message& message, std::string_view what) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) return InternalError("cannot encode " + std::string(what) + ": " + std::string(status.message()));
  return json;
}

Status FromJson(std::string_view json, google::protobuf::Message* message, std::string_view where,
                std::string_view what) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message, options);
  if (!status.ok()) {
    return DataLossError(std::string(where) + " is not a valid checkpoint " + std::string(what) + " (" +
                         std::string(status.message()) + "); delete that step or restore another one");
  }
  return OkStatus();
}

// Every rank 0..world_size-1 exactly once, in order, each with safe paths.
Status ValidateRanks(const CheckpointManifest& manifest, std::string_view where) {
  if (manifest.world_size < 1 || static_cast<size_t>(manifest.world_size) != manifest.ranks.size()) {
    return DataLossError(std::string(where) + " has world_size " + std::to_string(manifest.world_size) + " but " +
                         std::to_string(manifest.ranks.size()) + " rank entries");
  }
  for (size_t i = 0; i < manifest.ranks.size(); ++i) {
    if (manifest.ranks[i].rank != static_cast<int>(i)) {
      return DataLossError(std::string(where) + " lists rank " + std::to_string(manifest.ranks[i].rank) +
                           " where rank " + std::to_string(i) + " belongs");
    }
    Status valid = ValidateCheckpointFiles(manifest.ranks[i].files);
    if (!valid.ok()) return valid.WithContext(std::string(where) + " rank " + std::to_string(i));
  }
  return OkStatus();
}

}  // namespace

uint64_t CheckpointRankPart::total_bytes() const { return TotalBytes(files); }

Result<std::string> EncodePart(const CheckpointPart& part) {
  pb::Part message;
  message.set_format_version(kMultiRankManifestFormatVersion);
  message.set_step(part.step);
  message.set_world_size(static_cast<uint32_t>(part.world_size));
  *message.mutable_wall_time() = TimeUtil::NanosecondsToTimestamp(ToNanos(part.wall_time));
  ToProto(part.part, message.mutable_part());
  return ToJson(message, "the part of rank " + std::to_string(part.part.rank) + " of step " +
                             std::to_string(part.step));
}

Result<CheckpointPart> DecodePart(std::string_view json, std::string_view where) {
  pb::Part message;
  SPOOL_RETURN_IF_ERROR(FromJson(json, &message, where, "part"));
  if (message.format_version() != kMultiRankManifestFormatVersion) {
    return DataLossError(std::string(where) + " has part format version " +
                         std::to_string(message.format_version()) + ", expected " +
                         std::to_string(kMultiRankManifestFormatVersion));
  }
  CheckpointPart part;
  part.step = message.step();
  part.world_size = static_cast<int>(message.world_size());
  part.wall_time = FromNanos(TimeUtil::TimestampToNanoseconds(message.wall_time()));
  part.part = FromProto(message.part());
  if (part.world_size < 1 || part.part.rank >= part.world_size) {
    return InvalidArgumentError(std::string(where) + " is rank " + std::to_string(part.part.rank) + " of " +
                                std::to_string(part.world_size) + ": not a valid rank");
  }
  Status valid = ValidateCheckpointFiles(part.part.files);
  if (!valid.ok()) return valid.WithContext(where);
  return part;
}

std::string FormatCrc32c(uint32_t crc) { return crc32c::ToHex(crc); }

uint64_t CheckpointManifest::total_bytes() const { return TotalBytes(files); }

Result<std::string> EncodeManifest(const CheckpointManifest& manifest) {
  pb::Manifest message;
  message.set_format_version(manifest.format_version);
  message.set_step(manifest.step);
  *message.mutable_wall_time() = TimeUtil::NanosecondsToTimestamp(ToNanos(manifest.wall_time));
  for (const CheckpointFile& file : manifest.files) ToProto(file, message.add_files());
  for (const auto& [key, value] : manifest.metadata) (*message.mutable_metadata())[key] = value;
  if (manifest.format_version >= kMultiRankManifestFormatVersion) {
    message.set_world_size(static_cast<uint32_t>(manifest.world_size));
    for (const CheckpointRankPart& part : manifest.ranks) ToProto(part, message.add_ranks());
  }
  return ToJson(message, "the manifest of step " + std::to_string(manifest.step));
}

Result<CheckpointManifest> DecodeManifest(std::string_view json, std::string_view where) {
  pb::Manifest message;
  SPOOL_RETURN_IF_ERROR(FromJson(json, &message, where, "manifest"));
  if (message.format_version() == 0) {
    return DataLossError(std::string(where) + " has no format_version: not a checkpoint manifest");
  }
  if (message.format_version() > kNewestManifestFormatVersion) {
    return FailedPreconditionError(std::string(where) + " has format version " +
                                   std::to_string(message.format_version()) + " but this build reads up to " +
                                   std::to_string(kNewestManifestFormatVersion) + "; upgrade spool to read it");
  }
  CheckpointManifest manifest;
  manifest.format_version = message.format_version();
  manifest.step = message.step();
  manifest.wall_time = FromNanos(TimeUtil::TimestampToNanoseconds(message.wall_time()));
  manifest.files.reserve(message.files_size());
  for (const pb::ManifestFile& entry : message.files()) manifest.files.push_back(FromProto(entry));
  for (const auto& [key, value] : message.metadata()) manifest.metadata[key] = value;
  Status valid = ValidateCheckpointFiles(manifest.files);
  if (!valid.ok()) return valid.WithContext(where);
  if (manifest.format_version >= kMultiRankManifestFormatVersion) {
    manifest.world_size = static_cast<int>(message.world_size());
    for (const pb::RankPart& part : message.ranks()) manifest.ranks.push_back(FromProto(part));
    SPOOL_RETURN_IF_ERROR(ValidateRanks(manifest, where));
  }
  return manifest;
}

Status ValidateCheckpointPath(std::string_view path) {
  auto refuse = [&](std::string_view why) {
    return InvalidArgumentError("checkpoint file path " + Quote(path) + " " + std::string(why) +
                                "; only relative paths inside the checkpoint folder are allowed");
  };
  if (path.empty()) return refuse("is empty");
  if (path.front() == '/') return refuse("is absolute");
  for (unsigned char c : path) {
    if (c == '\\') return refuse("contains a backslash");
    if (c == 0) return refuse("contains a NUL byte");
    if (c < 0x20 || c == 0x7f) return refuse("contains a control character");
  }
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    std::string_view segment = path.substr(start, end == std::string_view::npos ? end : end - start);
    if (segment.empty()) return refuse("has an empty segment");
    if (segment == "..") return refuse("contains '..'");
    if (segment == ".") return refuse("contains '.'");
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (path == kReservedName) return refuse("is reserved for the manifest");
  return OkStatus();
}

Status ValidateCheckpointFiles(const std::vector<CheckpointFile>& files) {
  std::set<std::string_view> paths;
  for (const CheckpointFile& file : files) {
    SPOOL_RETURN_IF_ERROR(ValidateCheckpointPath(file.path));
    // Only a key inside the step folder can be read for it.
    if (!file.stored_path.empty()) SPOOL_RETURN_IF_ERROR(ValidateCheckpointPath(file.stored_path));
    if (!paths.insert(file.path).second) {
      return InvalidArgumentError("checkpoint file path " + Quote(file.path) + " is listed twice");
    }
  }
  // A path that is a folder of another: "a" sorts right before "a/...".
  for (const CheckpointFile& file : files) {
    std::string folder = file.path + "/";
    auto next = paths.lower_bound(folder);
    if (next != paths.end() && next->substr(0, folder.size()) == folder) {
      return InvalidArgumentError("checkpoint file path " + Quote(file.path) + " is both a file and the folder of " +
                                  Quote(*next));
    }
  }
  return OkStatus();
}

}  // namespace spool::checkpoint
