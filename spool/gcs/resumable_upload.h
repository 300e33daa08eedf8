// ResumableUpload: streams one object through a resumable upload session.
//
// Append() fills chunk buffers (chunk_size, a multiple of 256 KiB); each full
// chunk is handed to a task on the executor that sends chunks in order, one
// at a time, while Append goes on filling the next ones, up to
// chunks_in_flight chunks handed over and not yet confirmed (each holding a
// ByteBudget lease; a PartPipeline with one sender). A chunk whose request fails is recovered the resumable
// way: ask the session how much it has (308 + Range) and send the rest, under
// spool::Retry. Finish() sends the last chunk with the object's size and its
// CRC32C (x-goog-hash), which the service checks before committing.
//
// The session URI is enough to continue in another process: Suspend() waits
// for what was handed over and returns a ResumableUploadState to persist;
// a ResumableUpload made from that state continues at state.committed (the
// caller supplies the bytes from there on). The URI is a capability: it is
// never logged.
//
// Not thread-safe (one writer thread), like WritableObject.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "spool/core/cancel.h"
#include "spool/core/executor.h"
#include "spool/core/part_pipeline.h"
#include "spool/core/retry.h"
#include "spool/core/status.h"
#include "spool/gcs/client.h"

namespace spool::gcs {

inline constexpr uint64_t kChunkGranularity = 256 * 1024;

struct ResumableUploadState {
  std::string session_uri;
  uint64_t committed = 0;  // bytes the session holds
  uint32_t crc32c = 0;     // CRC32C of those bytes (so the final hash can still be sent)

  // One line of text ("spool-gcs-resumable-v1 <committed> <crc32c> <uri>")
  // for a file; Parse reads it back.
  std::string Serialize() const;
  static Result<ResumableUploadState> Parse(std::string_view text);
};

struct ResumableUploadOptions {
  uint64_t chunk_size = 16ull << 20;  // rounded down to a multiple of 256 KiB
  int chunks_in_flight = 4;
  Executor* executor = nullptr;  // default: DefaultExecutor()
  ByteBudget* budget = nullptr;  // default: DefaultByteBudget()
  RetryOptions retry;
};

class ResumableUpload {
 public:
  // Continues the session in `state` (committed = 0 for a new session).
  // `url` names the object for messages.
  ResumableUpload(GcsClient& client, std::string url, ResumableUploadState state, ResumableUploadOptions options);
  // Abandons the chunk in flight (its request is cancelled) and waits for
  // the sending task; does not cancel the session (Cancel does).
  ~ResumableUpload();
  ResumableUpload(const ResumableUpload&) = delete;
  ResumableUpload& operator=(const ResumableUpload&) = delete;

  Status Append(std::string_view data);
  // Sends the rest and commits; returns the object the service stored.
  Result<ObjectMetadata> Finish();
  // Sends every whole 256 KiB unit appended so far and returns the state to
  // persist; bytes after state.committed must be appended again by whoever
  // resumes. The upload cannot be used afterwards.
  Result<ResumableUploadState> Suspend();
  // Stops the chunk in flight and cancels the session (DELETE, sent even
  // when the caller's work was cancelled).
  Status Cancel();

  uint64_t bytes_appended() const { return fill_begin_ + fill_.size(); }
  const std::string& session_uri() const { return session_uri_; }

 private:
  struct Chunk {
    uint64_t begin = 0;
    std::string data;
  };

  Status StartFill();
  // Hands `fill_` (or its first `bytes`) to the sender; fails with the
  // upload's first error.
  Status HandOver(size_t bytes);
  Status SendChunk(const Chunk& chunk, bool last, std::optional<uint32_t> crc);

  GcsClient& client_;
  const std::string url_;
  const std::string session_uri_;
  const ResumableUploadOptions options_;
  const uint64_t chunk_size_;

  // Writer-thread state.
  std::string fill_;
  ByteBudget::Lease fill_lease_;  // pays for fill_
  uint64_t fill_begin_ = 0;
  uint32_t crc_all_ = 0;     // of every byte appended
  uint32_t crc_handed_ = 0;  // of the bytes handed over
  bool finished_ = false;

  // Shared with the sending task.
  std::mutex mu_;
  uint64_t committed_ = 0;
  std::optional<ObjectMetadata> object_;

  // Sends the chunks handed over, one at a time and in order; declared
  // last, so destroyed before anything its sends use.
  PartPipeline chunks_;
};

}  // namespace spool::gcs
