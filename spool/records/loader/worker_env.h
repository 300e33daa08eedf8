// Which worker of a distributed job this process is, from explicit options
// or from the environment the launcher set.
//
// Launchers understood, in this order of precedence:
//   torchrun / PyTorchJob      RANK, WORLD_SIZE
//   MPIJob / Horovod (Open MPI) OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//                              (MPICH / Intel MPI: PMI_RANK, PMI_SIZE)
//   TFJob                      TF_CONFIG: {"cluster": {...}, "task": {"type", "index"}}
//                              ranked as TensorFlow's multi-worker strategies
//                              do: the chief (or "master") first, then the
//                              workers by index; "evaluator" reads alone
//                              (rank 0 of 1); "ps" reads no training data.
//   Indexed Job                JOB_COMPLETION_INDEX, with the completions
//                              count given as world_size (Kubernetes does not
//                              export it; set it in the options or as
//                              SPOOL_WORLD_SIZE in the pod spec).
// An explicit rank and world size win over all of these. Nothing found: rank
// 0 of 1. Pure functions; the environment is passed in (the loader passes
// CurrentEnv()) so tests need no setenv. An empty variable counts as set: an
// empty RANK is an error, not rank 0.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "spool/core/env.h"
#include "spool/core/status.h"

namespace spool::loader {

struct WorkerIdentity {
  int rank = 0;
  int world_size = 1;
  std::string source;  // "explicit", "torchrun", "mpi", "TF_CONFIG", "indexed-job", "default"
};

// Resolves rank and world size; InvalidArgument (naming the variable and its
// value) for malformed or inconsistent settings, e.g. RANK >= WORLD_SIZE.
Result<WorkerIdentity> ResolveWorker(std::optional<int> rank, std::optional<int> world_size, const Env& env);

// TensorFlow's ranking of a TF_CONFIG task, exposed for tests.
Result<WorkerIdentity> WorkerFromTfConfig(std::string_view tf_config_json);

}  // namespace spool::loader
