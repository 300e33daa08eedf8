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
// identical to TensorFlow's for the same records.
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
  static constexpr int kDefaultLevel = -1;  // Z_DEFAULT_COMPRESSION, as TensorFlow

  // `compression` must be kZlib or kGzip; level -1 or 0..9.
  static Result<std::unique_ptr<Deflater>> Create(Compression compression, int level = kDefaultLevel);
  ~Deflater();

  // Compresses `input`, appending whatever output is ready to `*out`.
  Status Deflate(std::string_view input, std::string* out);
  // Ends the stream (one Z_FINISH), appending the rest to `*out`.
  Status Finish(std::string* out);

 private:
  struct State;
  explicit Deflater(std::unique_ptr<State> state);
  Status Run(std::string_view input, int flush, std::string* out);
  std::unique_ptr<State> state_;
};

}  // namespace spool::records
