#include "spool/records/loader/worker_env.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <charconv>

namespace spool::loader {
namespace {

Result<int> ParseNonNegative(std::string_view name, std::string_view text) {
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return InvalidArgumentError("environment variable " + std::string(name) + "='" + std::string(text) +
                                "' is not a non-negative integer; fix the launcher settings");
  }
  return value;
}

Status CheckRange(const WorkerIdentity& id) {
  if (id.world_size < 1 || id.rank < 0 || id.rank >= id.world_size) {
    return InvalidArgumentError("worker rank " + std::to_string(id.rank) + " is outside world size " +
                                std::to_string(id.world_size) + " (from " + id.source +
                                "); give 0 <= rank < world_size");
  }
  return OkStatus();
}

// A rank/size pair of environment variables; nullopt when the rank is unset.
Result<std::optional<WorkerIdentity>> FromPair(const Env& env, std::string_view rank_name, std::string_view size_name,
                                               std::string source, std::optional<int> explicit_world) {
  auto rank_text = env.GetEvenIfEmpty(rank_name);
  if (!rank_text) return std::optional<WorkerIdentity>();
  WorkerIdentity id;
  id.source = std::move(source);
  SPOOL_ASSIGN_OR_RETURN(id.rank, ParseNonNegative(rank_name, *rank_text));
  if (explicit_world) {
    id.world_size = *explicit_world;
  } else if (auto size_text = env.GetEvenIfEmpty(size_name)) {
    SPOOL_ASSIGN_OR_RETURN(id.world_size, ParseNonNegative(size_name, *size_text));
  } else {
    return InvalidArgumentError(std::string(rank_name) + " is set but " + std::string(size_name) +
                                " is not; set both, or give world_size in the loader options");
  }
  return std::optional<WorkerIdentity>(id);
}

int ListSize(const google::protobuf::Struct& cluster, const std::string& type) {
  auto it = cluster.fields().find(type);
  if (it == cluster.fields().end() || !it->second.has_list_value()) return 0;
  return it->second.list_value().values_size();
}

}  // namespace

Result<WorkerIdentity> WorkerFromTfConfig(std::string_view tf_config_json) {
  google::protobuf::Struct config;
  auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(tf_config_json.data(), tf_config_json.size()), &config);
  if (!parsed.ok()) return InvalidArgumentError("TF_CONFIG is not valid JSON: " + parsed.ToString());
  const auto& fields = config.fields();
  auto task_it = fields.find("task");
  if (task_it == fields.end() || !task_it->second.has_struct_value()) {
    return InvalidArgumentError("TF_CONFIG has no \"task\" object; the TFJob operator sets one");
  }
  const auto& task = task_it->second.struct_value().fields();
  auto type_it = task.find("type");
  auto index_it = task.find("index");
  if (type_it == task.end() || index_it == task.end() || index_it->second.number_value() < 0) {
    return InvalidArgumentError("TF_CONFIG task needs \"type\" and a non-negative \"index\"");
  }
  const std::string type = type_it->second.string_value();
  const int index = static_cast<int>(index_it->second.number_value());
  google::protobuf::Struct cluster;
  if (auto it = fields.find("cluster"); it != fields.end() && it->second.has_struct_value()) {
    cluster = it->second.struct_value();
  }
  WorkerIdentity id;
  id.source = "TF_CONFIG";
  if (type == "evaluator") return id;  // evaluates on its own: rank 0 of 1
  if (type == "ps") {
    return FailedPreconditionError("TF_CONFIG task type \"ps\" (parameter server) reads no training data; "
                                   "create the DataLoader on chief and worker tasks only");
  }
  const int chiefs = ListSize(cluster, "chief") + ListSize(cluster, "master");
  const int workers = ListSize(cluster, "worker");
  id.world_size = chiefs + workers;
  if (type == "chief" || type == "master") {
    id.rank = index;
  } else if (type == "worker") {
    id.rank = chiefs + index;
  } else {
    return InvalidArgumentError("TF_CONFIG task type \"" + type +
                                "\" is not one of chief, master, worker, evaluator, ps");
  }
  SPOOL_RETURN_IF_ERROR(CheckRange(id));
  return id;
}

Result<WorkerIdentity> ResolveWorker(std::optional<int> rank, std::optional<int> world_size, const Env& env) {
  if (rank && world_size) {
    WorkerIdentity id{*rank, *world_size, "explicit"};
    SPOOL_RETURN_IF_ERROR(CheckRange(id));
    return id;
  }
  std::optional<int> world = world_size;
  if (!world) {
    if (auto text = env.GetEvenIfEmpty("SPOOL_WORLD_SIZE")) {
      SPOOL_ASSIGN_OR_RETURN(world, ParseNonNegative("SPOOL_WORLD_SIZE", *text));
    }
  }
  std::optional<WorkerIdentity> found;
  SPOOL_ASSIGN_OR_RETURN(found, FromPair(env, "RANK", "WORLD_SIZE", "torchrun", world));
  if (!found) {
    SPOOL_ASSIGN_OR_RETURN(found, FromPair(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpi", world));
  }
  if (!found) {
    SPOOL_ASSIGN_OR_RETURN(found, FromPair(env, "PMI_RANK", "PMI_SIZE", "mpi", world));
  }
  if (!found) {
    if (auto tf_config = env.GetEvenIfEmpty("TF_CONFIG"); tf_config && !tf_config->empty()) {
      SPOOL_ASSIGN_OR_RETURN(auto id, WorkerFromTfConfig(*tf_config));
      if (world && *world != id.world_size) {
        return InvalidArgumentError("world_size " + std::to_string(*world) + " disagrees with TF_CONFIG's " +
                                    std::to_string(id.world_size) + " chief+worker tasks");
      }
      found = id;
    }
  }
  if (!found) {
    if (auto index = env.GetEvenIfEmpty("JOB_COMPLETION_INDEX")) {
      if (!world) {
        return InvalidArgumentError("JOB_COMPLETION_INDEX is set but the completions count is unknown; give "
                                    "world_size in the loader options or SPOOL_WORLD_SIZE in the pod spec");
      }
      WorkerIdentity id;
      id.source = "indexed-job";
      SPOOL_ASSIGN_OR_RETURN(id.rank, ParseNonNegative("JOB_COMPLETION_INDEX", *index));
      id.world_size = *world;
      found = id;
    }
  }
  if (!found) {
    found = WorkerIdentity{0, world.value_or(1), world ? "explicit" : "default"};
    if (found->world_size != 1) {
      return InvalidArgumentError("world_size " + std::to_string(found->world_size) +
                                  " given but no rank, and no launcher variables (RANK, OMPI_COMM_WORLD_RANK, "
                                  "TF_CONFIG, JOB_COMPLETION_INDEX) are set; give the rank too");
    }
  }
  if (rank) {
    found->rank = *rank;
    found->source = "explicit";
  }
  SPOOL_RETURN_IF_ERROR(CheckRange(*found));
  return *found;
}

}  // namespace spool::loader
