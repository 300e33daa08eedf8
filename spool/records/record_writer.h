// RecordWriter: writes one TFRecord file to any ObjectStore, byte for byte
// as TensorFlow's TFRecordWriter would for the same records and compression.
//
// Records are framed (length, CRCs) into a buffer that is handed to the
// store's WritableObject in large appends, so an S3 or GCS object streams up
// as a multipart / resumable upload. Nothing is visible under the key until
// Close() succeeds; Abort(), an error, or destruction without Close()
// discards the object. With write_index, the DALI index file
// "<key>.idx" is written after the shard is committed (uncompressed only).
//
// Not thread-safe: one thread writes one file (the sharded writer runs many
// in parallel).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/records/compressed_stream.h"
#include "spool/records/compression.h"
#include "spool/records/record_index.h"

namespace spool::records {

struct RecordWriterOptions {
  std::optional<Compression> compression;   // default: from the key's extension
  int compression_level = Deflater::kDefaultLevel;
  size_t append_size = 4 << 20;             // bytes gathered before each Append
  bool write_index = false;                 // "<key>.idx" beside the file (NONE only)
  WriteOptions write;                       // passed to OpenWrite
};

// What a closed writer produced.
struct WrittenFile {
  std::string key;
  std::string url;
  uint64_t records = 0;
  uint64_t payload_bytes = 0;
  uint64_t bytes = 0;     // stored object size
  uint32_t crc32c = 0;    // CRC32C of the stored bytes
  std::string index_key;  // empty unless an index was written
  ObjectInfo info;        // as the store reported it
};

class RecordWriter {
 public:
  static Result<std::unique_ptr<RecordWriter>> Open(ObjectStore& store, std::string_view key,
                                                    const RecordWriterOptions& options = {});
  ~RecordWriter();  // aborts unless closed

  Status Write(std::string_view record);
  // Flushes, finishes the compressed stream, commits the object (then the
  // index). After an error nothing is visible and the writer is closed.
  Result<WrittenFile> Close();
  void Abort();

  uint64_t records() const { return records_; }
  uint64_t payload_bytes() const { return payload_bytes_; }
  // Bytes of the uncompressed record stream so far (== file size for NONE).
  uint64_t stream_bytes() const { return stream_bytes_; }
  // Bytes handed to the store so far.
  uint64_t object_bytes() const { return object_bytes_; }
  const std::string& url() const { return url_; }

 private:
  RecordWriter(ObjectStore& store, std::string key, std::string url, const RecordWriterOptions& options,
               std::unique_ptr<WritableObject> object, std::unique_ptr<Deflater> deflater);
  Status AddToStream(std::string_view bytes);
  Status AppendToObject(std::string_view bytes);
  Status FlushOutput();
  Status Failed(Status status);

  ObjectStore& store_;
  std::string key_;
  std::string url_;
  RecordWriterOptions options_;
  std::unique_ptr<WritableObject> object_;
  std::unique_ptr<Deflater> deflater_;  // null for NONE
  std::string pending_;  // NONE: framed bytes; else input waiting for deflate
  std::string output_;   // compressed bytes waiting for Append
  RecordIndex index_;
  uint64_t records_ = 0;
  uint64_t payload_bytes_ = 0;
  uint64_t stream_bytes_ = 0;
  uint64_t object_bytes_ = 0;
  uint32_t crc_ = 0;
  bool closed_ = false;
};

}  // namespace spool::records
