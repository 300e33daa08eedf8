#include "spool/records/compressed_stream.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#if SPOOL_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace spool::records {
namespace {

uInt ClampToUInt(size_t n) { return static_cast<uInt>(std::min<size_t>(n, UINT_MAX)); }

int WindowBits(Compression compression) {
  return compression == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS;
}

class ZlibInflater final : public Inflater {
 public:
  explicit ZlibInflater(Compression compression) : gzip_(compression == Compression::kGzip) {}
  ~ZlibInflater() override {
    if (initialized_) inflateEnd(&stream_);
  }

  Status Init() {
    if (inflateInit2(&stream_, gzip_ ? MAX_WBITS + 16 : MAX_WBITS) != Z_OK) {
      return InternalError("zlib inflateInit2 failed");
    }
    initialized_ = true;
    return OkStatus();
  }

  Result<Step> Inflate(std::span<const char> input, std::span<char> output) override {
    // Called with no input, it still flushes output zlib holds back.
    if (output.empty()) return Step{};
    if (stream_ended_) {
      if (!gzip_ || input.empty()) return Step{};
      // TensorFlow calls inflateReset at each member end: the next bytes must
      // be another member.
      inflateReset(&stream_);
      stream_ended_ = false;
    }
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
    stream_.avail_in = ClampToUInt(input.size());
    stream_.next_out = reinterpret_cast<Bytef*>(output.data());
    stream_.avail_out = ClampToUInt(output.size());
    const uInt in_before = stream_.avail_in;
    const uInt out_before = stream_.avail_out;
    int rc = inflate(&stream_, Z_NO_FLUSH);
    Step step{in_before - stream_.avail_in, out_before - stream_.avail_out};
    if (step.consumed > 0) in_member_ = true;
    if (rc == Z_STREAM_END) {
      stream_ended_ = true;
      in_member_ = false;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      std::string message = "inflate() failed with error " + std::to_string(rc);
      if (stream_.msg != nullptr) message += std::string(": ") + stream_.msg;
      return DataLossError(message);
    }
    return step;
  }

  bool done() const override { return stream_ended_ && !gzip_; }
  bool at_boundary() const override { return !in_member_; }
  const char* engine_name() const override { return "zlib"; }

 private:
  const bool gzip_;
  z_stream stream_{};
  bool initialized_ = false;
  bool stream_ended_ = false;
  bool in_member_ = false;
};

#if SPOOL_HAVE_ISAL
const char* IsalErrorName(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid lookback distance";
    case ISAL_INVALID_WRAPPER: return "invalid gzip/zlib header";
    case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect checksum";
    case ISAL_NEED_DICT: return "stream needs a preset dictionary";
    default: return "error";
  }
}

class IsalInflater final : public Inflater {
 public:
  explicit IsalInflater(Compression compression)
      : gzip_(compression == Compression::kGzip), state_(std::make_unique<inflate_state>()) {
    Reset();
  }

  Result<Step> Inflate(std::span<const char> input, std::span<char> output) override {
    if (output.empty()) return Step{};
    if (stream_ended_) {
      if (!gzip_ || input.empty()) return Step{};
      Reset();
    }
    state_->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(input.data()));
    state_->avail_in = static_cast<uint32_t>(std::min<size_t>(input.size(), UINT32_MAX));
    state_->next_out = reinterpret_cast<uint8_t*>(output.data());
    state_->avail_out = static_cast<uint32_t>(std::min<size_t>(output.size(), UINT32_MAX));
    const uint32_t in_before = state_->avail_in;
    const uint32_t out_before = state_->avail_out;
    int rc = isal_inflate(state_.get());
    Step step{in_before - state_->avail_in, out_before - state_->avail_out};
    if (step.consumed > 0) in_member_ = true;
    if (rc < 0 || rc == ISAL_NEED_DICT) {
      return DataLossError(std::string("inflate failed: ") + IsalErrorName(rc) + " (" + std::to_string(rc) + ")");
    }
    if (state_->block_state == ISAL_BLOCK_FINISH) {
      stream_ended_ = true;
      in_member_ = false;
    }
    return step;
  }

  bool done() const override { return stream_ended_ && !gzip_; }
  bool at_boundary() const override { return !in_member_; }
  const char* engine_name() const override { return "isal"; }

 private:
  void Reset() {
    isal_inflate_init(state_.get());
    state_->crc_flag = gzip_ ? ISAL_GZIP : ISAL_ZLIB;
    stream_ended_ = false;
  }

  const bool gzip_;
  std::unique_ptr<inflate_state> state_;
  bool stream_ended_ = false;
  bool in_member_ = false;
};
#endif

}  // namespace

bool Inflater::HasIsal() {
#if SPOOL_HAVE_ISAL
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<Inflater>> Inflater::Create(Compression compression, Engine engine) {
  if (compression == Compression::kNone) {
    return InvalidArgumentError("an inflater needs ZLIB or GZIP compression");
  }
  if (engine == Engine::kIsal && !HasIsal()) {
    return UnimplementedError("this build of spool has no ISA-L inflate");
  }
#if SPOOL_HAVE_ISAL
  if (engine != Engine::kZlib) return std::unique_ptr<Inflater>(new IsalInflater(compression));
#endif
  auto inflater = std::make_unique<ZlibInflater>(compression);
  SPOOL_RETURN_IF_ERROR(inflater->Init());
  return std::unique_ptr<Inflater>(std::move(inflater));
}

namespace {

// zlib with TensorFlow's ZlibCompressionOptions.
class ZlibDeflater final : public Deflater {
 public:
  ~ZlibDeflater() override {
    if (initialized_) deflateEnd(&stream_);
  }

  Status Init(Compression compression, int level) {
    // TensorFlow's ZlibCompressionOptions: memory level 9, default strategy.
    constexpr int kMemLevel = 9;
    if (deflateInit2(&stream_, level, Z_DEFLATED, WindowBits(compression), kMemLevel, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      return InternalError("zlib deflateInit2 failed");
    }
    initialized_ = true;
    return OkStatus();
  }

  Status Deflate(std::string_view input, std::string* out) override {
    if (input.empty()) return OkStatus();
    return Run(input, Z_NO_FLUSH, out);
  }
  Status Finish(std::string* out) override { return Run({}, Z_FINISH, out); }
  const char* engine_name() const override { return "zlib"; }

 private:
  Status Run(std::string_view input, int flush, std::string* out) {
    z_stream& s = stream_;
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
    size_t input_left = input.size();
    while (true) {
      uInt chunk = ClampToUInt(input_left);
      s.avail_in = chunk;
      const size_t old_size = out->size();
      const size_t room = std::max<size_t>(deflateBound(&s, chunk), 64 * 1024);
      out->resize(old_size + room);
      s.next_out = reinterpret_cast<Bytef*>(out->data() + old_size);
      s.avail_out = ClampToUInt(room);
      const bool last_chunk = chunk == input_left;
      int rc = deflate(&s, last_chunk ? flush : Z_NO_FLUSH);
      out->resize(old_size + (room - s.avail_out));
      input_left -= chunk - s.avail_in;
      if (rc == Z_STREAM_END) return OkStatus();
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return InternalError("deflate() failed with error " + std::to_string(rc));
      }
      // Done when all input is in and zlib had output room to spare.
      if (input_left == 0 && s.avail_out != 0 && flush == Z_NO_FLUSH) return OkStatus();
    }
  }

  z_stream stream_{};
  bool initialized_ = false;
};

#if SPOOL_HAVE_ISAL
// ISA-L's deflate at level 1: one GZIP member or ZLIB stream, with ISA-L's
// generic header (no name, mtime 0).
class IsalDeflater final : public Deflater {
 public:
  explicit IsalDeflater(Compression compression)
      : stream_(std::make_unique<isal_zstream>()),
        level_buffer_(std::make_unique_for_overwrite<uint8_t[]>(ISAL_DEF_LVL1_DEFAULT)) {
    isal_deflate_init(stream_.get());
    stream_->level = 1;
    stream_->level_buf = level_buffer_.get();
    stream_->level_buf_size = ISAL_DEF_LVL1_DEFAULT;
    stream_->gzip_flag = compression == Compression::kGzip ? IGZIP_GZIP : IGZIP_ZLIB;
    stream_->flush = NO_FLUSH;
  }

  Status Deflate(std::string_view input, std::string* out) override {
    if (input.empty()) return OkStatus();
    return Run(input, /*finish=*/false, out);
  }
  Status Finish(std::string* out) override { return Run({}, /*finish=*/true, out); }
  const char* engine_name() const override { return "isal"; }

 private:
  Status Run(std::string_view input, bool finish, std::string* out) {
    isal_zstream& s = *stream_;
    const char* next = input.data();
    size_t input_left = input.size();
    while (true) {
      const uint32_t chunk = static_cast<uint32_t>(std::min<size_t>(input_left, UINT32_MAX / 2));
      s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(next));
      s.avail_in = chunk;
      const bool last_chunk = chunk == input_left;
      s.end_of_stream = finish && last_chunk ? 1 : 0;
      // Level 1 output is rarely larger than its input; the loop takes
      // care of the rare case.
      const size_t old_size = out->size();
      const size_t room = std::max<size_t>(chunk + chunk / 8, 64 * 1024);
      out->resize(old_size + room);
      s.next_out = reinterpret_cast<uint8_t*>(out->data() + old_size);
      s.avail_out = static_cast<uint32_t>(room);
      const int rc = isal_deflate(&s);
      out->resize(old_size + (room - s.avail_out));
      if (rc != COMP_OK) return InternalError("isal_deflate failed with error " + std::to_string(rc));
      const uint32_t used = chunk - s.avail_in;
      next += used;
      input_left -= used;
      if (finish) {
        if (input_left == 0 && s.internal_state.state == ZSTATE_END) return OkStatus();
      } else if (input_left == 0 && s.avail_out != 0) {
        return OkStatus();
      }
    }
  }

  std::unique_ptr<isal_zstream> stream_;
  std::unique_ptr<uint8_t[]> level_buffer_;
};
#endif

}  // namespace

Result<std::unique_ptr<Deflater>> Deflater::Create(Compression compression, int level) {
  if (compression == Compression::kNone) {
    return InvalidArgumentError("a deflater needs ZLIB or GZIP compression");
  }
  if (level < kFastLevel || level > 9) {
    return InvalidArgumentError("compression level " + std::to_string(level) +
                                " is out of range: use default, fast or 0..9");
  }
#if SPOOL_HAVE_ISAL
  if (level == kFastLevel) return std::unique_ptr<Deflater>(new IsalDeflater(compression));
#endif
  auto deflater = std::make_unique<ZlibDeflater>();
  SPOOL_RETURN_IF_ERROR(deflater->Init(compression, level == kFastLevel ? 1 : level));
  return std::unique_ptr<Deflater>(std::move(deflater));
}

Result<int> Deflater::ParseLevel(std::string_view text) {
  if (text == "default") return kDefaultLevel;
  if (text == "fast") return kFastLevel;
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '9') return text[0] - '0';
  return InvalidArgumentError("compression level '" + std::string(text) +
                              "' is not one of default, fast or 0..9 (default gives TensorFlow's bytes)");
}

}  // namespace spool::records
