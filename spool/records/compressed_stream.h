// Streaming ZLIB/GZIP codecs with TensorFlow's settings.
//
// Inflater decompresses as TensorFlow's ZlibInputStream does: ZLIB is one
// RFC 1950 stream and bytes after its end are ignored; GZIP restarts after
// each member, so concatenated members read as one stream, and anything
// after a member that is not another member is an error. It uses ISA-L's
// inflate where spool was built with it (about 2.5x zlib), else zlib.
//
// Deflater compresses as TensorFlow's ZlibOutputBuffer does: default level,
// window bits 15 (ZLIB) or 31 (GZIP), memory level 9, default strategy,
// Z_NO_FLUSH for every input and one Z_FINISH at the end, so the bytes are
// identical to TensorFlow's for the same records. The fast level trades
// that identity for speed (ISA-L's deflate): one ordinary GZIP member or
// ZLIB stream all the same.
//
// Neither is thread-safe; each object serves one stream. Errors are DataLoss
// (corrupt input) or Internal, with the codec's own words; callers add the
// object URL and offset.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/records/compression.h"

namespace spool::records {

class Inflater {
 public:
  enum class Engine { kAuto, kZlib, kIsal };

  // `compression` must be kZlib or kGzip. kIsal is Unimplemented in builds
  // without ISA-L; kAuto picks ISA-L where present.
  static Result<std::unique_ptr<Inflater>> Create(Compression compression, Engine engine = Engine::kAuto);
  static bool HasIsal();

  virtual ~Inflater() = default;

  struct Step {
    size_t consumed = 0;  // input bytes used
    size_t produced = 0;  // output bytes written
  };
  // Decompresses from `input` into `output`. Makes progress whenever input
  // is left and the stream is not done, and output has room; called with no
  // input, it hands out what it still holds (call until it produces none).
  virtual Result<Step> Inflate(std::span<const char> input, std::span<char> output) = 0;

  // ZLIB only: the stream ended; later input is to be ignored.
  virtual bool done() const = 0;
  // No member is partly decoded: the input may end here cleanly (true
  // before any input, after a GZIP member, after the ZLIB stream).
  virtual bool at_boundary() const = 0;
  virtual const char* engine_name() const = 0;
};

class Deflater {
 public:
  // Levels: kDefaultLevel and 0..9 are zlib's, with TensorFlow's other
  // settings (the default gives TensorFlow's bytes exactly). kFastLevel is
  // ISA-L's level 1 where spool was built with ISA-L (zlib level 1
  // otherwise): many times faster than the default, files a little larger,
  // readable by every GZIP/ZLIB reader (docs/performance.md has figures).
  static constexpr int kDefaultLevel = -1;  // Z_DEFAULT_COMPRESSION, as TensorFlow
  static constexpr int kFastLevel = -2;

  // `compression` must be kZlib or kGzip; `level` one of the above.
  static Result<std::unique_ptr<Deflater>> Create(Compression compression, int level = kDefaultLevel);
  // "default", "fast" or 0..9, as the CLI's --compression-level takes it.
  static Result<int> ParseLevel(std::string_view text);

  virtual ~Deflater() = default;

  // Compresses `input`, appending whatever output is ready to `*out`.
  virtual Status Deflate(std::string_view input, std::string* out) = 0;
  // Ends the stream, appending the rest to `*out`.
  virtual Status Finish(std::string* out) = 0;
  virtual const char* engine_name() const = 0;
};

}  // namespace spool::records
