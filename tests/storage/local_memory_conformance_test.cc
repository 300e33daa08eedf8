// The conformance suite on the two stores core ships: memory and local files.
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "tests/storage/conformance.h"
#include "tests/support/temp_dir.h"

namespace spool::conformance {
namespace {

std::string NextCaseName() {
  static std::atomic<int> counter{0};
  return "case-" + std::to_string(counter++);
}

StoreUnderTest OpenMemory() {
  static auto store = std::make_shared<MemoryStore>("conformance");
  return {store, NextCaseName() + "/", nullptr};
}

// Each case gets its own temporary folder; the key prefix is its absolute
// path without the leading '/'.
StoreUnderTest OpenLocal() {
  static auto store = std::make_shared<LocalStore>();
  auto folder = std::make_shared<test_support::TempDir>("spool-local-conformance");
  if (folder->path().empty()) return {};
  return {store, folder->path().string().substr(1) + "/", [folder]() mutable { folder.reset(); }};
}

SPOOL_INSTANTIATE_STORE_CONFORMANCE(
    CoreStores,
    ConformanceTarget{.name = "memory", .open = OpenMemory},
    ConformanceTarget{.name = "local", .open = OpenLocal, .replaced_object_read = ReplacedObjectRead::kOldContent});

}  // namespace
}  // namespace spool::conformance
