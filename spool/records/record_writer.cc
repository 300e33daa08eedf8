#include "spool/records/record_writer.h"

#include <algorithm>

#include "spool/core/crc32c.h"
#include "spool/records/framing.h"

namespace spool::records {
namespace {
// TensorFlow's ZlibOutputBuffer gathers input in a 256 KiB buffer before
// each deflate; larger inputs are deflated directly. (zlib's output does not
// depend on how Z_NO_FLUSH input is split; this only sets the call size.)
constexpr size_t kDeflateInputSize = 256 << 10;
}  // namespace

RecordWriter::RecordWriter(ObjectStore& store, std::string key, std::string url, const RecordWriterOptions& options,
                           std::unique_ptr<WritableObject> object, std::unique_ptr<Deflater> deflater)
    : store_(store),
      key_(std::move(key)),
      url_(std::move(url)),
      options_(options),
      object_(std::move(object)),
      deflater_(std::move(deflater)) {
  options_.append_size = std::max<size_t>(options_.append_size, 4096);
  pending_.reserve(deflater_ ? kDeflateInputSize : options_.append_size);
}

RecordWriter::~RecordWriter() { Abort(); }

Result<std::unique_ptr<RecordWriter>> RecordWriter::Open(ObjectStore& store, std::string_view key,
                                                         const RecordWriterOptions& options) {
  const Compression compression = options.compression.value_or(CompressionFromExtension(key));
  if (options.write_index && compression != Compression::kNone) {
    return InvalidArgumentError("cannot write an index for " + store.Describe(key) + ": index files describe " +
                                "uncompressed files only; drop write_index or the compression");
  }
  if (compression == Compression::kNone && options.compression_level != Deflater::kDefaultLevel) {
    return InvalidArgumentError("cannot compress " + store.Describe(key) + " at a level: it is uncompressed (" +
                                "no compression given, no .gz/.zlib extension); drop the level or set the compression");
  }
  std::unique_ptr<Deflater> deflater;
  if (compression != Compression::kNone) {
    SPOOL_ASSIGN_OR_RETURN(deflater, Deflater::Create(compression, options.compression_level));
  }
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<WritableObject> object, store.OpenWrite(key, options.write));
  return std::unique_ptr<RecordWriter>(new RecordWriter(store, std::string(key), store.Describe(key), options,
                                                        std::move(object), std::move(deflater)));
}

Status RecordWriter::Failed(Status status) {
  Abort();
  return status.WithContext("writing " + url_);
}

Status RecordWriter::AppendToObject(std::string_view bytes) {
  if (bytes.empty()) return OkStatus();
  crc_ = crc32c::Extend(crc_, bytes.data(), bytes.size());
  object_bytes_ += bytes.size();
  return object_->Append(bytes);
}

Status RecordWriter::FlushOutput() {
  SPOOL_RETURN_IF_ERROR(AppendToObject(output_));
  output_.clear();
  return OkStatus();
}

Status RecordWriter::AddToStream(std::string_view bytes) {
  stream_bytes_ += bytes.size();
  const size_t buffer_size = deflater_ ? kDeflateInputSize : options_.append_size;
  if (pending_.size() + bytes.size() <= buffer_size) {
    pending_.append(bytes);
    return OkStatus();
  }
  // The buffer is full: hand it on, then take `bytes` directly when it is as
  // large as a buffer (no copy), else start the next buffer with it.
  const auto pass_on = [&](std::string_view data) -> Status {
    if (!deflater_) return AppendToObject(data);
    SPOOL_RETURN_IF_ERROR(deflater_->Deflate(data, &output_));
    return output_.size() >= options_.append_size ? FlushOutput() : OkStatus();
  };
  SPOOL_RETURN_IF_ERROR(pass_on(pending_));
  pending_.clear();
  if (bytes.size() >= buffer_size) return pass_on(bytes);
  pending_.append(bytes);
  return OkStatus();
}

Status RecordWriter::Write(std::string_view record) {
  if (closed_) return FailedPreconditionError("cannot write to " + url_ + ": the writer is closed");
  char header[kHeaderSize];
  char footer[kFooterSize];
  EncodeHeader(record.size(), header);
  EncodeFooter(record, footer);
  if (options_.write_index) index_.Add(stream_bytes_, record.size() + kFramingSize);
  Status status = AddToStream(std::string_view(header, kHeaderSize));
  if (status.ok()) status = AddToStream(record);
  if (status.ok()) status = AddToStream(std::string_view(footer, kFooterSize));
  if (!status.ok()) return Failed(std::move(status));
  ++records_;
  payload_bytes_ += record.size();
  return OkStatus();
}

Result<WrittenFile> RecordWriter::Close() {
  if (closed_) return FailedPreconditionError("cannot close " + url_ + ": the writer is already closed");
  Status status;
  if (deflater_) {
    status = deflater_->Deflate(pending_, &output_);
    if (status.ok()) status = deflater_->Finish(&output_);
    if (status.ok()) status = FlushOutput();
  } else {
    status = AppendToObject(pending_);
  }
  pending_.clear();
  if (!status.ok()) return Failed(std::move(status));
  auto info = object_->Close();
  closed_ = true;
  object_.reset();
  if (!info.ok()) return info.status().WithContext("committing " + url_);

  WrittenFile file;
  file.key = key_;
  file.url = url_;
  file.records = records_;
  file.payload_bytes = payload_bytes_;
  file.bytes = object_bytes_;
  file.crc32c = crc_;
  file.info = std::move(*info);
  if (options_.write_index) {
    file.index_key = IndexKeyFor(key_);
    auto written = WriteAll(store_, file.index_key, index_.Serialize());
    if (!written.ok()) return written.status().WithContext("writing the index of " + url_);
  }
  return file;
}

void RecordWriter::Abort() {
  if (closed_) return;
  closed_ = true;
  if (object_) object_->Abort();
  object_.reset();
}

}  // namespace spool::records
