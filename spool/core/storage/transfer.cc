#include "spool/core/storage/transfer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "spool/core/buffer_pool.h"
#include "spool/core/cancel.h"
#include "spool/core/crc32c.h"
#include "spool/core/log.h"
#include "spool/core/storage/local_files.h"
#include "spool/core/storage/ranged_reads.h"
#include "spool/core/storage/upload_state.h"
#include "spool/core/storage/verify.h"

namespace spool {

namespace {

Executor& ExecutorOf(const TransferOptions& options) {
  return options.executor != nullptr ? *options.executor : DefaultExecutor();
}

ByteBudget& BudgetOf(const TransferOptions& options) {
  return options.budget != nullptr ? *options.budget : DefaultByteBudget();
}

// How this transfer splits its reads of `object`: the reader's own split,
// with the caller's smaller part size or other parts in flight. A part is
// never larger than the reader's, so each ReadAt is one request.
RangedReads SplitFor(const ReadableObject& object, const TransferOptions& options) {
  RangedReads reads = object.ranged_reads();
  reads.part_size = std::max<uint64_t>(reads.part_size, 1);
  if (options.part_size != 0) reads.part_size = std::min(reads.part_size, options.part_size);
  if (options.concurrency > 0) reads.parts_in_flight = options.concurrency;
  reads.parts_in_flight = std::max(reads.parts_in_flight, 1);
  return reads;
}

// UploadFile's pieces of the file: no reader to follow.
uint64_t UploadPieceOf(const TransferOptions& options) {
  return options.part_size != 0 ? options.part_size : uint64_t{16} << 20;
}

Result<std::unique_ptr<ReadableObject>> OpenSource(ObjectStore& from, std::string_view key,
                                                   const TransferOptions& options) {
  if (options.listed && options.listed->key == key) return from.OpenListed(*options.listed);
  return from.OpenRead(key);
}

void ReportProgress(const TransferOptions& options, uint64_t bytes) {
  if (options.on_progress) options.on_progress(bytes);
}

// Leases the budget for one more buffer of a transfer (one lease each,
// released when the transfer ends). Only the first buffer waits for room;
// later ones are taken only when free right now, so a transfer never blocks
// while it already holds budget (two transfers each holding half the budget
// cannot wait on each other). False when no room was free.
bool LeaseAnotherBuffer(std::vector<ByteBudget::Lease>& leases, ByteBudget& budget, uint64_t bytes) {
  if (leases.empty()) {
    leases.emplace_back(&budget, bytes);
    return true;
  }
  std::optional<ByteBudget::Lease> lease = ByteBudget::Lease::TryAcquire(budget, bytes);
  if (!lease) return false;
  leases.push_back(std::move(*lease));
  return true;
}

// Fills `buffer` from `offset`, or fails with DataLoss if the object ends
// first (the handle is pinned, so its size cannot shrink legitimately).
Status ReadExactly(ReadableObject& object, uint64_t offset, std::span<char> buffer, std::string_view url) {
  size_t filled = 0;
  while (filled < buffer.size()) {
    SPOOL_ASSIGN_OR_RETURN(size_t n, object.ReadAt(offset + filled, buffer.subspan(filled)));
    if (n == 0) return ShortReadError(url, offset, filled, buffer.size());
    filled += n;
  }
  return OkStatus();
}

// A file descriptor closed on scope exit.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() { Close(); }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  int Close() {
    int result = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

// A temporary file removed on scope exit unless it was renamed into place.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) {}
  ~TemporaryFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::string& path() const { return path_; }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

Status CheckWrittenChecksum(ObjectStore& to, std::string_view to_key, const ObjectInfo& written, uint32_t crc) {
  if (!written.crc32c || *written.crc32c == crc) return OkStatus();
  // The bad object must not stay behind looking like a good copy.
  to.Delete(to_key).IgnoreError();
  return DataLossError(to.Describe(to_key) + ": the store reports CRC32C " + crc32c::ToHex(*written.crc32c) +
                       " but the bytes sent have " + crc32c::ToHex(crc) + "; the object was deleted, retry the transfer");
}

}  // namespace

Result<size_t> ReadParallel(ReadableObject& object, uint64_t offset, std::span<char> buffer,
                            const TransferOptions& options) {
  const uint64_t size = object.info().size;
  if (offset > size) return object.ReadAt(offset, buffer);  // the object's own OutOfRange
  std::span<char> wanted = buffer.first(std::min<uint64_t>(buffer.size(), size - offset));
  // At most parts_in_flight reads of this call are in flight whatever the
  // pool size; each part is one ReadAt, which the reader sends as one request.
  auto read_part = [&](uint64_t at, std::span<char> part) -> Status {
    SPOOL_RETURN_IF_ERROR(ReadExactly(object, at, part, object.info().key));
    ReportProgress(options, part.size());
    return OkStatus();
  };
  SPOOL_RETURN_IF_ERROR(ReadInParts(ExecutorOf(options), SplitFor(object, options), offset, wanted, read_part));
  return wanted.size();
}

Result<ObjectInfo> CopyObject(ObjectStore& from, std::string_view from_key, ObjectStore& to,
                              std::string_view to_key, const TransferOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> source, OpenSource(from, from_key, options));
  const ObjectInfo& info = source->info();
  const std::string source_url = from.Describe(from_key);
  WriteOptions write = options.write;
  if (!write.expected_size) write.expected_size = info.size;
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<WritableObject> writer, to.OpenWrite(to_key, write));

  const CancelToken cancel = CancelToken::Current();
  // Parts are read ahead in parallel and appended in order. Declaration
  // order matters: in_flight is destroyed first, and each part's TaskGroup
  // (its last member) waits for its read before the buffer goes away.
  struct Part {
    uint64_t offset = 0;
    std::string buffer;
    std::unique_ptr<TaskGroup> reading;
  };
  const RangedReads split = SplitFor(*source, options);
  const uint64_t part_size = split.part_size;
  const size_t concurrency = static_cast<size_t>(split.parts_in_flight);
  std::vector<ByteBudget::Lease> buffer_leases;
  std::vector<std::string> spares;  // buffers to reuse: fresh memory is slow
  std::deque<std::unique_ptr<Part>> in_flight;
  uint64_t next_offset = 0;
  uint32_t crc = 0;
  // Without a CRC32C, the source's other checksum (docs/integrity.md), over
  // the parts in order as they are appended. One part is one whole read,
  // which a reader that verifies whole reads has checked already.
  std::optional<ChecksumVerifier> verifier;
  if (!info.crc32c && info.digest && !(info.size <= part_size && source->verifies_whole_reads())) {
    verifier.emplace(*info.digest, source_url);
  }

  while (next_offset < info.size || !in_flight.empty()) {
    while (next_offset < info.size && in_flight.size() < concurrency) {
      if (in_flight.size() == buffer_leases.size() &&
          !LeaseAnotherBuffer(buffer_leases, BudgetOf(options), part_size)) {
        break;
      }
      auto part = std::make_unique<Part>();
      part->offset = next_offset;
      if (!spares.empty()) {
        part->buffer = std::move(spares.back());
        spares.pop_back();
      }
      part->buffer.resize(std::min<uint64_t>(part_size, info.size - next_offset));
      part->reading = std::make_unique<TaskGroup>(ExecutorOf(options));
      Part* raw = part.get();
      raw->reading->Submit([object = source.get(), raw, &source_url] {
        return ReadExactly(*object, raw->offset, raw->buffer, source_url);
      });
      next_offset += raw->buffer.size();
      in_flight.push_back(std::move(part));
    }
    Part& oldest = *in_flight.front();
    SPOOL_RETURN_IF_ERROR(oldest.reading->Wait());
    SPOOL_RETURN_IF_ERROR(cancel.Check("copying " + source_url));
    crc = crc32c::Extend(crc, oldest.buffer.data(), oldest.buffer.size());
    if (verifier) verifier->Update(oldest.buffer);
    SPOOL_RETURN_IF_ERROR(writer->Append(oldest.buffer));
    ReportProgress(options, oldest.buffer.size());
    spares.push_back(std::move(oldest.buffer));
    in_flight.pop_front();
  }

  if (info.crc32c && *info.crc32c != crc) {
    writer->Abort();
    return DataLossError(source_url + ": the bytes read have CRC32C " + crc32c::ToHex(crc) +
                         " but the source reports " + crc32c::ToHex(*info.crc32c) + "; nothing was written, retry the copy");
  }
  if (verifier) {
    if (Status checked = verifier->Finish("nothing was written"); !checked.ok()) {
      writer->Abort();
      return checked;
    }
  }
  SPOOL_RETURN_IF_ERROR(cancel.Check("copying " + source_url));  // nothing commits once cancelled
  SPOOL_ASSIGN_OR_RETURN(ObjectInfo written, writer->Close());
  SPOOL_RETURN_IF_ERROR(CheckWrittenChecksum(to, to_key, written, crc));
  written.crc32c = crc;
  return written;
}

namespace {

// Hands the first `size` bytes of `fd` to `take` in order, read with pread
// through `buffer` (the file offset is left alone).
template <typename Take>
Status ReadFileInOrder(int fd, const std::string& name, uint64_t size, std::span<char> buffer,
                       const CancelToken& cancel, Take take) {
  for (uint64_t offset = 0; offset < size;) {
    SPOOL_RETURN_IF_ERROR(cancel.Check("reading " + name));
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - offset));
    ssize_t n = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, name, "read at offset " + std::to_string(offset));
    }
    if (n == 0) {
      return FailedPreconditionError(name + " changed size while it was read (" + std::to_string(size) +
                                     " bytes at the start, " + std::to_string(offset) + " read); retry when it is stable");
    }
    take(buffer.data(), static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return OkStatus();
}

// The CRC32C of the first `size` bytes of `fd`.
Result<uint32_t> FileCrc32c(int fd, const std::string& name, uint64_t size, std::span<char> buffer,
                            const CancelToken& cancel) {
  uint32_t crc = 0;
  SPOOL_RETURN_IF_ERROR(ReadFileInOrder(fd, name, size, buffer, cancel, [&](const char* data, size_t n) {
    crc = crc32c::Extend(crc, data, n);
  }));
  return crc;
}

}  // namespace

namespace {

// The state file of an upload of `mine` to `key`, locked, with the token of
// an upload a killed process left for the same unchanged file in `*token`.
// One left for a file that changed is ended here. nullopt (upload without
// resuming) when there is no place for state or another upload of the same
// object holds it.
std::optional<UploadStateFile> ResumeStateFor(ObjectStore& to, std::string_view key, const UploadRecord& mine,
                                              std::string* token) {
  Result<UploadStateFile> opened = UploadStateFile::Open(mine.destination, UploadStateFolder());
  if (!opened.ok()) {
    log::Write(log::Level::kInfo, "transfer", "uploading without resume state: " + opened.status().ToString());
    return std::nullopt;
  }
  if (!opened->locked()) {
    log::Write(log::Level::kInfo, "transfer", "another upload to " + mine.destination + " is running: not resuming");
    return std::nullopt;
  }
  if (std::optional<UploadRecord> kept = opened->Load()) {
    if (kept->SameSource(mine)) {
      *token = kept->token;
    } else {
      to.DiscardResumableUpload(key, kept->token).IgnoreError();
      opened->Remove();
    }
  }
  return std::move(opened).value();
}

}  // namespace

Result<ObjectInfo> UploadFile(const std::filesystem::path& path, ObjectStore& to, std::string_view key,
                              const TransferOptions& options) {
  const std::string name = path.string();
  ScopedFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, name, "open");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, name, "stat");
  if (S_ISDIR(st.st_mode)) return FailedPreconditionError(name + " is a directory, not a file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);

  const uint64_t chunk = std::clamp<uint64_t>(size, 1, UploadPieceOf(options));
  const ByteBudget::Lease buffer_lease(&BudgetOf(options), chunk);
  BufferPool::Buffer pooled = DefaultBufferPool().Take(chunk);
  const std::span<char> buffer(pooled.data(), pooled.size());
  const CancelToken cancel = CancelToken::Current();
  WriteOptions write = options.write;
  write.expected_size = size;
  // Any file may become a multipart upload, whose checksum the store cannot
  // take from one request body: where that happens is the store's part size
  // (8 MiB for S3), not this transfer's piece, so a file between the two
  // went up with no CRC32C at all. Read every file once first so the writer
  // can store its CRC32C with the object (S3 keeps it as metadata for later
  // reads to verify). Page-cached, this costs about 2% of an upload's time;
  // it also catches a file that changes meanwhile.
  if (size > 0) {
    SPOOL_ASSIGN_OR_RETURN(write.crc32c, FileCrc32c(fd.get(), name, size, buffer, cancel));
  }
  // Declared before the writer: its on_token hook writes here until the
  // writer is gone.
  std::optional<UploadStateFile> state;
  ResumeOptions resume;
  if (options.resume && write.crc32c && to.resumable_uploads()) {
    UploadRecord mine{to.Describe(key), std::filesystem::absolute(path).string(), size,
                      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec, *write.crc32c, ""};
    if (std::optional<UploadStateFile> found = ResumeStateFor(to, key, mine, &resume.token)) {
      state.emplace(std::move(*found));
    }
    if (state) {
      resume.on_token = [&state, mine](const std::string& token) mutable {
        mine.token = token;
        if (Status saved = state->Save(mine); !saved.ok()) log::Write(log::Level::kInfo, "transfer", saved.ToString());
      };
    }
  }
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<WritableObject> writer,
                         state ? to.OpenResumableUpload(key, write, resume) : to.OpenWrite(key, write));
  // The state goes with the upload: committed, failed or cancelled (the
  // writer aborts it). Only a process that dies leaves it.
  struct ForgetState {
    std::optional<UploadStateFile>& state;
    ~ForgetState() {
      if (state) state->Remove();
    }
  } forget{state};
  uint64_t total = 0;
  uint32_t crc = 0;
  for (;;) {
    SPOOL_RETURN_IF_ERROR(cancel.Check("uploading " + name));  // the writer aborts as we return
    // The file goes straight into the writer's part buffer where it offers
    // one (no copy through `buffer`); past the size stat() gave, only our
    // buffer, so that a file that grew is caught below without asking the
    // writer for room (which would send a last full part early).
    std::span<char> into = buffer;
    bool direct = false;
    if (total < size) {
      SPOOL_ASSIGN_OR_RETURN(std::span<char> room,
                             writer->AppendSpace(static_cast<size_t>(std::min<uint64_t>(size - total, buffer.size()))));
      if (!room.empty()) {
        into = room;
        direct = true;
      }
    }
    ssize_t n = ::read(fd.get(), into.data(), into.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, name, "read at offset " + std::to_string(total));
    }
    if (n == 0) break;
    const size_t got = static_cast<size_t>(n);
    crc = crc32c::Extend(crc, into.data(), got);
    SPOOL_RETURN_IF_ERROR(direct ? writer->CommitAppend(got) : writer->Append(std::string_view(into.data(), got)));
    total += got;
    ReportProgress(options, got);
  }
  if (total != size) {
    return FailedPreconditionError(name + " changed size while it was uploaded (" + std::to_string(size) +
                                   " bytes at the start, " + std::to_string(total) + " read); retry when it is stable");
  }
  if (write.crc32c && *write.crc32c != crc) {
    return FailedPreconditionError(name + " changed while it was uploaded (CRC32C " + crc32c::ToHex(*write.crc32c) +
                                   " before, " + crc32c::ToHex(crc) + " read); retry when it is stable");
  }
  SPOOL_RETURN_IF_ERROR(cancel.Check("uploading " + name));
  SPOOL_ASSIGN_OR_RETURN(ObjectInfo written, writer->Close());
  SPOOL_RETURN_IF_ERROR(CheckWrittenChecksum(to, key, written, crc));
  written.crc32c = crc;
  return written;
}

Result<ObjectInfo> DownloadFile(ObjectStore& from, std::string_view key, const std::filesystem::path& path,
                                const TransferOptions& options) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> source, OpenSource(from, key, options));
  ObjectInfo info = source->info();
  const std::string source_url = from.Describe(key);
  const std::string name = path.string();
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return FailedPreconditionError(name + " is a directory; give a file name to download " + from.Describe(key) + " to");
  }
  std::filesystem::path folder = path.parent_path();
  if (!folder.empty()) {
    std::filesystem::create_directories(folder, error);
    if (error) return ErrnoStatus(error.value(), folder.string(), "create directory");
  }
  TemporaryFile temp((folder / TemporaryNameFor(path.filename().string())).string());
  // Read and write: an object without a CRC32C is hashed from it afterwards.
  ScopedFd fd(::open(temp.path().c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (fd.get() < 0) {
    temp.Release();  // not ours to remove
    return ErrnoStatus(errno, name, "create a temporary file beside");
  }

  // One part is one request to the source (SplitFor).
  const RangedReads split = SplitFor(*source, options);
  const uint64_t part_size = split.part_size;
  const size_t parts = static_cast<size_t>(PartCount(split, info.size));
  std::vector<uint32_t> part_crcs(parts);
  std::vector<ByteBudget::Lease> buffer_leases;
  while (buffer_leases.size() < std::min(parts, static_cast<size_t>(split.parts_in_flight)) &&
         LeaseAnotherBuffer(buffer_leases, BudgetOf(options), std::min(part_size, info.size))) {
  }
  const size_t workers = buffer_leases.size();
  std::atomic<size_t> next_part{0};
  // The workers take turns to write. A local file system serializes
  // buffered writes to one file on its inode lock anyway (ext4, xfs), and a
  // writer waiting there spins on its CPU while the holder copies: 13% of a
  // 1 GiB download's CPU (docs/performance.md, "Downloads to disk"). Here the
  // waiting worker sleeps.
  std::mutex write_mu;
  TaskGroup group(ExecutorOf(options));
  for (size_t w = 0; w < workers; ++w) {
    group.Submit([&]() -> Status {
      // From the pool: huge pages, and a `cp -r` of many files reuses them.
      BufferPool::Buffer pooled = DefaultBufferPool().Take(std::min(part_size, info.size));
      for (size_t part = next_part++; part < parts && !group.cancelled(); part = next_part++) {
        SPOOL_RETURN_IF_ERROR(CancelToken::Current().Check("downloading " + source_url));
        uint64_t offset = part * part_size;
        const std::span<char> buffer(pooled.data(), std::min(part_size, info.size - offset));
        SPOOL_RETURN_IF_ERROR(ReadExactly(*source, offset, buffer, source_url));
        // The part is checked and written a piece at a time, each piece's
        // CRC32C just before its write: the CRC brings the piece into this
        // core's L2, where the write's copy into the page cache finds it.
        // Checking the whole 16 MiB part after writing it read it from
        // memory twice (docs/performance.md, "Downloads to disk").
        constexpr size_t kPiece = 256 << 10;
        uint32_t part_crc = 0;
        for (size_t done = 0; done < buffer.size(); done += kPiece) {
          const std::span<const char> piece =
              std::span<const char>(buffer).subspan(done, std::min(kPiece, buffer.size() - done));
          part_crc = crc32c::Extend(part_crc, piece.data(), piece.size());
          std::lock_guard lock(write_mu);
          SPOOL_RETURN_IF_ERROR(WriteToFile(fd.get(), piece, offset + done, name));
        }
        part_crcs[part] = part_crc;
        ReportProgress(options, buffer.size());
      }
      return OkStatus();
    });
  }
  SPOOL_RETURN_IF_ERROR(group.Wait());

  uint32_t crc = 0;
  for (size_t part = 0; part < parts; ++part) {
    uint64_t length = std::min(part_size, info.size - part * part_size);
    crc = crc32c::Combine(crc, part_crcs[part], length);
  }
  if (info.crc32c && *info.crc32c != crc) {
    return DataLossError(from.Describe(key) + ": the bytes downloaded have CRC32C " + crc32c::ToHex(crc) +
                         " but the store reports " + crc32c::ToHex(*info.crc32c) + "; " + name + " was not written, retry");
  }
  // Without a CRC32C, the object's other checksum (a single-part ETag's MD5,
  // a full-object SHA-256, ...). Unlike a CRC it cannot be computed per part
  // and combined, and the parts were written in parallel: the file is read
  // back in order (from the page cache) once all are there, before the
  // rename. It costs CPU at the hash's speed, MD5 about 0.7 GB/s per core
  // (docs/integrity.md), and only objects without a CRC32C pay it: not those
  // spool uploaded, nor any GCS object. One part was one whole read, which a
  // reader that verifies whole reads has checked already.
  if (!info.crc32c && info.digest && !(parts == 1 && source->verifies_whole_reads())) {
    ChecksumVerifier verifier(*info.digest, source_url);
    BufferPool::Buffer pooled = DefaultBufferPool().Take(std::max<uint64_t>(std::min(part_size, info.size), 1));
    SPOOL_RETURN_IF_ERROR(ReadFileInOrder(fd.get(), name, info.size, std::span<char>(pooled.data(), pooled.size()),
                                          CancelToken::Current(),
                                          [&](const char* data, size_t n) { verifier.Update(data, n); }));
    SPOOL_RETURN_IF_ERROR(verifier.Finish(name + " was not written"));
  }
  // The temporary file goes away as we return: nothing partial is left.
  SPOOL_RETURN_IF_ERROR(CancelToken::Current().Check("downloading " + source_url));
  if (options.durable && ::fsync(fd.get()) != 0) return ErrnoStatus(errno, name, "fsync");
  if (fd.Close() != 0) return ErrnoStatus(errno, name, "close");
  if (::rename(temp.path().c_str(), name.c_str()) != 0) return ErrnoStatus(errno, name, "rename into place");
  temp.Release();
  if (options.durable) SPOOL_RETURN_IF_ERROR(SyncFolder(folder.empty() ? "." : folder.string()));
  info.crc32c = crc;
  return info;
}

Result<ObjectInfo> CopyObjectBetween(const ObjectEnd& from, const ObjectEnd& to, const TransferOptions& options) {
  if (from.store == to.store && from.key == to.key) {
    return InvalidArgumentError(from.store->Describe(from.key) + " and " + to.store->Describe(to.key) +
                                " are the same object");
  }
  if (to.local) return DownloadFile(*from.store, from.key, "/" + to.key, options);
  if (from.local) return UploadFile("/" + from.key, *to.store, to.key, options);
  if (from.store == to.store) {
    // Server-side: no byte leaves the service. A store without it streams.
    Result<ObjectInfo> copied = from.store->Copy(from.key, to.key);
    if (copied.ok() || copied.status().code() != StatusCode::kUnimplemented) {
      if (copied.ok() && options.on_progress) options.on_progress(copied->size);
      return copied;
    }
  }
  return CopyObject(*from.store, from.key, *to.store, to.key, options);
}

}  // namespace spool
