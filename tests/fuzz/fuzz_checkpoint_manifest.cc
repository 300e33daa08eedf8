// Fuzz target: the checkpoint manifest decoder, the gate every restore goes
// through. A manifest that decodes has only safe paths, and encodes and
// decodes back to the same files.
#include <cstdint>
#include <string_view>

#include "spool/checkpoint/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto manifest = spool::checkpoint::DecodeManifest(json, "mem://fuzz/step-000000000001/MANIFEST.json");
  if (!manifest.ok()) return 0;
  for (const auto& file : manifest->files) {
    if (!spool::checkpoint::ValidateCheckpointPath(file.path).ok()) __builtin_trap();  // an unsafe path got through
  }
  auto encoded = spool::checkpoint::EncodeManifest(*manifest);
  if (!encoded.ok()) return 0;
  auto again = spool::checkpoint::DecodeManifest(*encoded, "re-encoded");
  if (!again.ok() || again->files != manifest->files || again->step != manifest->step) __builtin_trap();
  return 0;
}
