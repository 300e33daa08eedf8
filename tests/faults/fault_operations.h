// The operations of the fault matrix: each one spool operation that crosses
// the network (a GET, a multipart PUT, a loader epoch, a checkpoint save...),
// run through the fault proxy, then checked against the server directly.
//
// An operation either succeeds with exactly the right data, or fails; in both
// cases it must leave no partial object, no checkpoint with a manifest but
// bad files, and a restore target folder either complete or untouched. What
// broke one of those rules is a violation; anything else is an outcome.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool::testing {

enum class Backend { kS3, kGcs };

// What one run of an operation sees.
struct OperationContext {
  std::shared_ptr<ObjectStore> store;   // through the fault proxy
  std::shared_ptr<ObjectStore> direct;  // straight to the server: setup and checks
  std::string fixed_prefix;             // data every cell shares (made once)
  std::string prefix;                   // fresh for this cell
  std::filesystem::path scratch;        // a fresh local folder for this cell
};

struct Verdict {
  Status status;          // what the operation returned
  std::string violation;  // empty unless an invariant broke
};

struct Operation {
  std::string name;
  Backend backend;
  // JSON fields matching the request the faults aim at (see fault_proxy.py),
  // and the commit request (complete multipart, final chunk, manifest PUT):
  // empty when the operation has none.
  std::string target;
  std::string commit_target;
  // Makes the data every cell of this operation reads (once, direct).
  std::function<Status(OperationContext&)> prepare;
  // Per cell, before the fault is armed (direct).
  std::function<Status(OperationContext&)> setup;
  // Runs the operation through the proxy and checks the result.
  std::function<Verdict(OperationContext&)> run;
};

const std::vector<Operation>& Operations();

// Deterministic test bytes.
std::string TestBytes(size_t size, uint64_t seed);

}  // namespace spool::testing
