// Fuzz target: the DALI index parser (records/record_index.h), with and
// without a file size to check against. What parses serialises back to an
// index that parses the same.
#include <cstdint>
#include <string_view>

#include "spool/records/record_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto index = spool::records::RecordIndex::Parse(text, "mem://fuzz/shard.idx");
  if (index.ok()) {
    (void)index->RecordAt(size);
    auto again = spool::records::RecordIndex::Parse(index->Serialize(), "reserialised", index->end_offset());
    if (!again.ok() || !(*again == *index)) __builtin_trap();
  }
  (void)spool::records::RecordIndex::Parse(text, "mem://fuzz/shard.idx", size * 16);
  return 0;
}
