// spool cp [-r] SRC... DST
//
// Any direction between any URLs and local paths; "-" is standard input (as
// the only source) or standard output (as the destination). With -r each
// source is a folder mirrored into DST: SRC/a/b lands at DST/a/b. Without
// -r, a source lands at DST itself, or inside it when DST is a folder (it
// ends with '/', is an existing local directory, or there are several
// sources). Files are copied in parallel; a failed file is reported and the
// others go on, and the command then exits 1.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "spool/core/cancel.h"
#include "spool/core/executor.h"
#include "spool/core/storage/transfer.h"

namespace spool::cli {

namespace {

constexpr size_t kStreamChunk = 8 << 20;

struct CpOptions {
  std::vector<std::string> paths;  // sources, then the destination
  bool recursive = false;
  bool no_resume = false;
  bool fsync = false;
};

struct Side {
  std::shared_ptr<ObjectStore> store;
  std::string key;
  bool local = false;
  std::optional<ObjectInfo> listed;  // a source as its folder's listing described it

  std::string Describe() const { return store->Describe(key); }
  std::string Path() const { return "/" + key; }  // for local sides
};

Side SideOf(const StoreLocation& location, std::string key, std::optional<ObjectInfo> listed = std::nullopt) {
  return Side{location.store, std::move(key), IsLocal(location), std::move(listed)};
}

// Copies one object the fastest way the two ends allow.
Result<ObjectInfo> CopyOne(const Side& from, const Side& to, const TransferOptions& options) {
  return CopyObjectBetween({from.store.get(), from.key, from.local}, {to.store.get(), to.key, to.local}, options);
}

// Runs copies in parallel on the shared executor, reporting each outcome.
// Thread-safe except Submit (see there).
class CopyRunner {
 public:
  // `base`: what every copy shares (resume, durable); the runner adds the
  // rest per copy.
  CopyRunner(const GlobalOptions& global, TransferOptions base)
      : global_(global),
        base_(std::move(base)),
        progress_(global, Progress::Unit::kBytes, 0),
        group_(DefaultExecutor()) {}

  // Blocks while one copy per executor thread is running (SPOOL_THREADS):
  // each copy mostly waits on the network, so more would only queue.
  // Bounding them bounds the nesting of TaskGroup waits (a waiting copy may
  // run a queued one) and the budget their first buffers take. Call from one
  // thread, not a task.
  void Submit(Side from, Side to, uint64_t size) {
    if (CancelToken::Current().cancelled()) return;  // interrupted: start nothing new
    progress_.AddTotal(size);
    {
      std::unique_lock lock(mu_);
      slot_free_.wait(lock, [this] { return running_ < copies_in_flight_; });
      ++running_;
      ++started_;
    }
    group_.Submit([this, from = std::move(from), to = std::move(to)]() -> Status {
      TransferOptions transfer = base_;
      transfer.on_progress = [this](uint64_t bytes) { progress_.Add(bytes); };
      transfer.listed = from.listed;
      Result<ObjectInfo> copied = CopyOne(from, to, transfer);
      std::lock_guard lock(mu_);
      --running_;
      slot_free_.notify_one();
      if (!copied.ok()) {
        Fail(copied.status());
      } else if (global_.json) {
        PrintLine("{\"copied\":" + JsonString(from.Describe()) + ",\"to\":" + JsonString(to.Describe()) +
                  ",\"size\":" + std::to_string(copied->size) + "}");
      } else if (!global_.quiet && !progress_.shown()) {
        PrintLine("copied " + from.Describe() + " -> " + to.Describe());
      }
      return OkStatus();  // one failed file does not stop the others
    });
  }

  // Records a failure that happened before any copy started.
  void Reject(const Status& status) {
    std::lock_guard lock(mu_);
    ++started_;
    Fail(status);
  }

  // OK, the one error there was, or a summary (each error was printed).
  Status Finish() {
    SPOOL_RETURN_IF_ERROR(group_.Wait());
    progress_.Finish();
    std::lock_guard lock(mu_);
    if (CancelToken::Current().cancelled()) {
      // Every copy has returned: writers aborted their uploads, downloads
      // removed their temporary files.
      return CancelledError(std::to_string(started_ - failed_) + " of " + std::to_string(started_) +
                            " copies finished; the rest stopped, leaving nothing partial (incomplete uploads "
                            "aborted, partial downloads removed)");
    }
    if (failed_ <= 1) return first_error_;
    return Status(first_error_.code(), std::to_string(failed_) + " of " + std::to_string(started_) + " copies failed");
  }

 private:
  // A single error is left for the caller to print; from the second on,
  // each is printed as it happens. Called with mu_ held.
  void Fail(const Status& status) {
    ++failed_;
    if (failed_ == 1) {
      first_error_ = status;
      return;
    }
    if (failed_ == 2) PrintError(first_error_);
    PrintError(status);
  }

  const GlobalOptions& global_;
  const TransferOptions base_;
  const size_t copies_in_flight_ = static_cast<size_t>(DefaultExecutor().threads());
  std::mutex mu_;
  std::condition_variable slot_free_;
  size_t running_ = 0;  // guarded by mu_, like the three below
  size_t started_ = 0;
  size_t failed_ = 0;
  Status first_error_;
  Progress progress_;  // bytes copied, on a terminal
  TaskGroup group_;  // last: waits for the tasks before the rest goes away
};

// Streams standard input into one object.
Status CopyFromStdin(const Side& to) {
  if (to.key.empty() || to.key.ends_with('/')) {
    return InvalidArgumentError("give an object name, not a folder, to copy standard input to (" + to.Describe() + ")");
  }
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<WritableObject> writer, to.store->OpenWrite(to.key));
  std::string buffer(kStreamChunk, '\0');
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return UnavailableError("reading standard input failed: " + std::string(std::strerror(errno)));
    if (n == 0) break;
    SPOOL_RETURN_IF_ERROR(writer->Append(std::string_view(buffer.data(), static_cast<size_t>(n))));
  }
  return writer->Close().status();
}

// Streams one object to standard output.
Status CopyToStdout(const Side& from) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> object, from.store->OpenRead(from.key));
  std::string buffer(std::min<uint64_t>(kStreamChunk * 4, object->info().size), '\0');
  const TransferOptions transfer;  // parts as the store's reader splits them
  for (uint64_t offset = 0; offset < object->info().size;) {
    SPOOL_ASSIGN_OR_RETURN(size_t n, ReadParallel(*object, offset, buffer, transfer));
    if (n == 0) return DataLossError(from.Describe() + " ended at byte " + std::to_string(offset) + " before its size");
    if (std::fwrite(buffer.data(), 1, n, stdout) != n) {
      return UnavailableError("writing " + from.Describe() + " to standard output failed");
    }
    offset += n;
  }
  return OkStatus();
}

// The object `key` names for cp without -r, or why it names none. A folder
// ("", a key ending in '/' even where the store keeps a folder marker by
// that name, or a name with objects below it) is copied with -r.
Result<ObjectInfo> SourceObject(ObjectStore& store, const std::string& key) {
  auto is_a_folder = [&] {
    return InvalidArgumentError(store.Describe(key) + " is a folder; copy it with spool cp -r");
  };
  if (key.empty() || key.ends_with('/')) return is_a_folder();
  Result<ObjectInfo> info = store.Stat(key);
  if (info.ok() || info.status().code() != StatusCode::kNotFound) return info;
  if (IsNonEmptyFolder(store, key).value_or(false)) return is_a_folder();
  return info;
}

// Queues the copy of every object below `source` into `destination`, placed
// by FolderMirror: folder markers become local folders, names that would
// climb out are refused. Warns, unless `quiet`, of what the listing left out
// (FIFOs, sockets, ...).
Status MirrorFolder(const StoreLocation& source, const StoreLocation& destination, CopyRunner& runner, bool quiet) {
  ObjectStore& store = *source.store;
  // Copying a folder into itself would list its own copies, without end.
  if (source.store == destination.store && FolderPrefix(destination.key).starts_with(FolderPrefix(source.key))) {
    return InvalidArgumentError("cannot copy " + store.Describe(source.key) + " into itself (" +
                                store.Describe(destination.key) + ")");
  }
  size_t found = 0;
  // A source that is itself an object is copied into the folder by name.
  if (!source.key.empty() && !source.key.ends_with('/')) {
    if (Result<ObjectInfo> info = store.Stat(source.key); info.ok()) {
      runner.Submit(SideOf(source, source.key), SideOf(destination, JoinKey(destination.key, BaseName(source.key))),
                    info->size);
      ++found;
    }
  }
  ListOptions list;
  list.prefix = FolderPrefix(source.key);
  FolderMirror mirror(store, list.prefix, destination);
  SPOOL_RETURN_IF_ERROR(ForEachPage(store, list, [&](const ListPage& page) {
    WarnSkipped(store, page, quiet);
    for (const ObjectInfo& info : page.objects) {
      ++found;
      Result<Placement> placed = mirror.Place(info);
      if (!placed.ok()) {
        runner.Reject(placed.status());
      } else if (placed->make_folder) {
        if (Status made = MakeLocalFolder(placed->key); !made.ok()) runner.Reject(made);
      } else if (!placed->relative.empty()) {  // empty: the source folder's own marker
        runner.Submit(SideOf(source, info.key, info), SideOf(destination, placed->key), info.size);
      }
    }
    return OkStatus();
  }));
  if (found == 0) return NotFoundError(store.Describe(source.key) + ": no such object or folder");
  return OkStatus();
}

bool IsExistingLocalDirectory(const StoreLocation& location) {
  std::error_code ignored;
  return IsLocal(location) && std::filesystem::is_directory("/" + location.key, ignored);
}

Status RunCp(const CpOptions& options, const GlobalOptions& global) {
  const std::vector<std::string> sources(options.paths.begin(), options.paths.end() - 1);
  const std::string& target = options.paths.back();
  const bool from_stdin = std::find(sources.begin(), sources.end(), "-") != sources.end();
  if (from_stdin && (sources.size() > 1 || target == "-" || options.recursive)) {
    return InvalidArgumentError("\"-\" (standard input) must be the only source, copied without -r to an object");
  }
  if (target == "-") {
    if (options.recursive) return InvalidArgumentError("cannot copy folders (-r) to standard output");
    for (const std::string& source : sources) {
      SPOOL_ASSIGN_OR_RETURN(StoreLocation from, Open(source, global));
      SPOOL_RETURN_IF_ERROR(CopyToStdout(SideOf(from, from.key)));
    }
    return OkStatus();
  }

  SPOOL_ASSIGN_OR_RETURN(StoreLocation destination, Open(target, global));
  if (from_stdin) return CopyFromStdin(SideOf(destination, destination.key));
  const bool into_folder = options.recursive || sources.size() > 1 || destination.key.empty() ||
                           destination.key.ends_with('/') || IsExistingLocalDirectory(destination);
  TransferOptions base;
  base.resume = !options.no_resume;  // uploads from files continue what a killed run left
  base.durable = options.fsync;
  CopyRunner runner(global, std::move(base));
  for (const std::string& text : sources) {
    Result<StoreLocation> source = Open(text, global);
    if (!source.ok()) {
      runner.Reject(source.status());
      continue;
    }
    if (options.recursive) {
      Status mirrored = MirrorFolder(*source, destination, runner, global.quiet);
      if (!mirrored.ok()) runner.Reject(mirrored);
      continue;
    }
    Result<ObjectInfo> info = SourceObject(*source->store, source->key);
    if (!info.ok()) {
      runner.Reject(info.status());
      continue;
    }
    std::string to_key = into_folder ? JoinKey(destination.key, BaseName(source->key)) : destination.key;
    runner.Submit(SideOf(*source, source->key), SideOf(destination, to_key), info->size);
  }
  return runner.Finish();
}

}  // namespace

Command AddCpCommand(CLI::App& spool, const GlobalOptions& global) {
  auto options = std::make_shared<CpOptions>();
  CLI::App* app = spool.add_subcommand("cp", "Copy objects and files between any URLs and local paths");
  app->add_option("paths", options->paths, "SRC... DST (\"-\" is standard input or output)")
      ->required()
      ->expected(2, CLI::detail::expected_max_vector_size);
  app->add_flag("-r,--recursive", options->recursive, "Copy folders: SRC/a/b lands at DST/a/b");
  app->add_flag("--no-resume", options->no_resume,
                "Do not continue an upload a killed spool left for the same file, and keep no state for one "
                "(by default large uploads from files resume: docs/integrity.md)");
  app->add_flag("--fsync", options->fsync,
                "Make each downloaded file durable (fsync it and its folder) before reporting it copied; "
                "off by default, as in the AWS CLI and rclone (docs/integrity.md)");
  app->footer(
      "Examples:\n"
      "  spool cp ./model.ckpt s3://my-bucket/ckpt/model.ckpt\n"
      "  spool cp -r gs://my-bucket/dataset/ ./dataset/\n"
      "  tar c logs | spool cp - s3://my-bucket/logs.tar\n");
  return {app, [options, &global] { return RunCp(*options, global); }};
}

}  // namespace spool::cli
