// Fuzz target: the TFRecord reader on arbitrary bytes, read as an
// uncompressed, a GZIP and a ZLIB file, with zlib and (where built) ISA-L
// inflate, in small chunks so records and compressed blocks straddle chunk
// boundaries. Any outcome but a crash, a hang or a sanitizer report is fine;
// a reader that returns records must also stop.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "spool/records/record_reader.h"

namespace {

// An object held in memory, read by ReadAt like any stored object.
class BytesObject : public spool::ReadableObject {
 public:
  explicit BytesObject(std::string_view bytes) : bytes_(bytes) {
    info_.key = "fuzz";
    info_.size = bytes.size();
    info_.version = "1";
  }
  const spool::ObjectInfo& info() const override { return info_; }
  spool::Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
    if (offset > bytes_.size()) return spool::OutOfRangeError("read past the end of the fuzz input");
    const size_t n = std::min<size_t>(buffer.size(), bytes_.size() - offset);
    std::memcpy(buffer.data(), bytes_.data() + offset, n);
    return n;
  }

 private:
  std::string_view bytes_;
  spool::ObjectInfo info_;
};

void ReadAll(std::string_view bytes, spool::records::Compression compression,
             spool::records::Inflater::Engine engine, spool::records::CorruptPolicy policy) {
  spool::records::RecordReaderOptions options;
  options.compression = compression;
  options.inflate_engine = engine;
  options.on_corrupt = policy;
  options.io.chunk_size = 97;  // odd and small: everything straddles chunks
  options.io.read_ahead = 0;   // on this thread: no executor in the loop
  options.inflate_block_size = 4096;
  auto reader = spool::records::RecordReader::Open(std::make_shared<BytesObject>(bytes), "mem://fuzz/input", options);
  if (!reader.ok()) return;
  std::string_view record;
  // Every record needs at least 16 bytes of stream, so a reader that returns
  // more records than the input could hold after inflating is looping.
  for (int i = 0; i < 1 << 20; ++i) {
    auto more = (*reader)->Next(&record);
    if (!more.ok() || !*more) return;
  }
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using spool::records::Compression;
  using spool::records::CorruptPolicy;
  using Engine = spool::records::Inflater::Engine;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ReadAll(bytes, Compression::kNone, Engine::kAuto, CorruptPolicy::kFail);
  ReadAll(bytes, Compression::kNone, Engine::kAuto, CorruptPolicy::kSkipRestOfShard);
  for (Compression compression : {Compression::kGzip, Compression::kZlib}) {
    ReadAll(bytes, compression, Engine::kZlib, CorruptPolicy::kFail);
    if (spool::records::Inflater::HasIsal()) ReadAll(bytes, compression, Engine::kIsal, CorruptPolicy::kSkipRestOfShard);
  }
  return 0;
}
