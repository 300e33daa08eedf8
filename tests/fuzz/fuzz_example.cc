// Fuzz target: tf.train.Example and SequenceExample decoding, and the typed
// getters on whatever decoded.
#include <cstdint>
#include <string_view>

#include "spool/records/example.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  if (auto example = spool::records::ParseExample(payload); example.ok()) {
    for (const auto& [name, feature] : example->features().feature()) {
      (void)spool::records::KindOf(feature);
      (void)spool::records::GetBytes(*example, name);
      (void)spool::records::GetFloats(*example, name);
      (void)spool::records::GetInt64s(*example, name);
    }
    // Serialising what was parsed must parse again.
    if (!spool::records::ParseExample(spool::records::SerializeExample(*example)).ok()) __builtin_trap();
  }
  if (auto sequence = spool::records::ParseSequenceExample(payload); sequence.ok()) {
    for (const auto& [name, list] : sequence->feature_lists().feature_list()) {
      (void)spool::records::GetFeatureList(*sequence, name);
    }
    (void)spool::records::SerializeSequenceExample(*sequence);
  }
  return 0;
}
