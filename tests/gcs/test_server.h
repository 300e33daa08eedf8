// What the GCS integration tests share: the local server the `gcs_server`
// CTest fixture started (SPOOL_GCS_SERVER_DIR names its folder), stores on
// it, its fault injection, and reproducible test data.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "spool/gcs/gcs_store.h"

namespace spool::gcs::testing {

struct TestServer {
  std::string dir;  // port, pid and credential files
  int port = 0;
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port); }
  std::string File(std::string_view name) const { return dir + "/" + std::string(name); }
};

// The fixture's server; fails the calling test if it is not running.
const TestServer& Server();

// A store for `bucket` on the server with anonymous access (an emulator
// setup), creating the bucket when missing. Options other than bucket,
// endpoint and credentials are taken from `base`.
std::shared_ptr<GcsStore> OpenStore(std::string_view bucket, GcsStoreOptions base = {});
// Creates `bucket` with `store`'s credentials (AlreadyExists is fine).
void EnsureBucket(GcsStore& store);

// Arms a fault (a JSON body for POST /_fault). ClearFaults removes the faults
// whose match contains `match`: tests run side by side on one server, so each
// clears only what it armed (a bucket of its own, or a path only it uses).
void ArmFault(std::string_view json);
void ClearFaults(std::string_view match);

// A name no other test of this run uses.
std::string UniqueName(std::string_view stem);

// Deterministic bytes: the content of a test object at `offset` (a
// multiple of 8) for any length.
void FillPattern(uint64_t offset, std::span<char> out);
std::string Pattern(uint64_t offset, size_t size);

}  // namespace spool::gcs::testing
