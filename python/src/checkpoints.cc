// The CheckpointManager, for spool/checkpoints.py. Saves, restores and
// waits release the GIL; sources are copied into a CheckpointSource (bytes
// buffers included) before it is released. A manager opened before fork()
// cannot be used in the child and is left to the parent there (process.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "bindings.h"
#include "metrics.h"
#include "process.h"
#include "spool/checkpoint/checkpoint_manager.h"

namespace py = pybind11;

namespace spool::python {
using checkpoint::AsyncSaveStart;
using checkpoint::CheckpointFile;
using checkpoint::CheckpointManager;
using checkpoint::CheckpointManifest;
using checkpoint::CheckpointOptions;
using checkpoint::CheckpointRankPart;
using checkpoint::CheckpointSource;
using checkpoint::CheckpointStats;
using checkpoint::ExistingFolder;

namespace {

py::dict FilesAndMetadata(const std::vector<CheckpointFile>& files, const std::map<std::string, std::string>& metadata) {
  py::list file_list;
  for (const CheckpointFile& file : files) {
    py::dict entry;
    entry["path"] = file.path;
    entry["size"] = file.size;
    entry["crc32c"] = file.crc32c;
    entry["stored_path"] = file.object_path();  // where the bytes are, relative to the same folder as `path`
    file_list.append(entry);
  }
  py::dict out;
  out["files"] = file_list;
  out["metadata"] = metadata;
  return out;
}

py::dict ManifestDict(const CheckpointManifest& manifest) {
  py::dict out = FilesAndMetadata(manifest.files, manifest.metadata);
  out["step"] = manifest.step;
  out["wall_time"] = std::chrono::duration<double>(manifest.wall_time.time_since_epoch()).count();
  out["world_size"] = manifest.world_size;
  py::list ranks;
  for (const CheckpointRankPart& part : manifest.ranks) {
    py::dict rank = FilesAndMetadata(part.files, part.metadata);
    rank["rank"] = part.rank;
    ranks.append(rank);
  }
  out["ranks"] = ranks;
  return out;
}

class Manager {
 public:
  Manager(const std::string& root, int rank, int world_size, int keep_last, int64_t save_every_steps,
          double save_every_seconds, std::string attempt, double part_timeout_seconds, bool copy_on_capture,
          bool clean_stale_parts, int rank_prefix_fanout) {
    CheckpointOptions options;
    options.rank = rank;
    options.world_size = world_size;
    options.retention.keep_last = keep_last;
    options.save.every_n_steps = save_every_steps;
    options.save.every_duration = std::chrono::seconds(static_cast<int64_t>(save_every_seconds));
    options.attempt = std::move(attempt);
    options.part_timeout = std::chrono::seconds(static_cast<int64_t>(part_timeout_seconds));
    options.copy_on_capture = copy_on_capture;
    options.clean_stale_parts_on_start = clean_stale_parts;
    options.rank_prefix_fanout = rank_prefix_fanout;
    py::gil_scoped_release release;
    manager_ = Unwrap(CheckpointManager::Open(root, options));
  }

  ~Manager() { Close(); }

  // Cancels a background save still in flight (nothing is committed) and
  // waits for it.
  void Close() {
    if (!manager_) return;
    if (owner_.Forked()) return Abandon(std::move(manager_));  // its tasks and connections are the parent's
    std::unique_ptr<CheckpointManager> manager = std::move(manager_);
    py::gil_scoped_release release;
    manager.reset();
  }

  bool ShouldSave(int64_t step) { return Get().ShouldSave(step); }

  py::dict Stats() {
    const CheckpointStats s = Get().Stats();
    py::dict out;
    out["saves"] = s.saves;
    out["save_failures"] = s.save_failures;
    out["uploaded_files"] = s.uploaded_files;
    out["uploaded_bytes"] = s.uploaded_bytes;
    out["restores"] = s.restores;
    out["restore_failures"] = s.restore_failures;
    out["restored_bytes"] = s.restored_bytes;
    out["last_saved_step"] = s.last_saved_step;
    out["save_seconds"] = HistogramDict(s.save_seconds);
    out["blocked_seconds"] = HistogramDict(s.blocked_seconds);
    out["upload_seconds"] = HistogramDict(s.upload_seconds);
    out["commit_seconds"] = HistogramDict(s.commit_seconds);
    out["restore_seconds"] = HistogramDict(s.restore_seconds);
    out["verify_seconds"] = HistogramDict(s.verify_seconds);
    out["requests"] = RequestsDict(Get().Requests());
    return out;
  }

  py::dict Save(int64_t step, CheckpointSource source, std::map<std::string, std::string> metadata) {
    CheckpointManager& manager = Get();
    CheckpointManifest manifest = [&] {
      py::gil_scoped_release release;
      return Unwrap(manager.Save(step, source, std::move(metadata)));
    }();
    return ManifestDict(manifest);
  }

  bool SaveAsync(int64_t step, CheckpointSource source, std::map<std::string, std::string> metadata) {
    CheckpointManager& manager = Get();
    py::gil_scoped_release release;
    AsyncSaveStart start = Unwrap(manager.SaveAsync(step, std::move(source), std::move(metadata)));
    ThrowIfError(start.previous);  // an earlier background save failed and was not collected
    return start.started;
  }

  py::dict Wait() {
    CheckpointManager& manager = Get();
    CheckpointManifest manifest = [&] {
      py::gil_scoped_release release;
      return Unwrap(manager.Wait());
    }();
    return ManifestDict(manifest);
  }

  bool SaveInFlight() { return Get().save_in_flight(); }

  std::optional<int64_t> Latest() {
    CheckpointManager& manager = Get();
    py::gil_scoped_release release;
    return Unwrap(manager.Latest());
  }

  py::list List() {
    CheckpointManager& manager = Get();
    std::vector<CheckpointManifest> manifests = [&] {
      py::gil_scoped_release release;
      return Unwrap(manager.List());
    }();
    py::list out;
    for (const CheckpointManifest& manifest : manifests) out.append(ManifestDict(manifest));
    return out;
  }

  py::dict ReadManifest(int64_t step) {
    CheckpointManager& manager = Get();
    CheckpointManifest manifest = [&] {
      py::gil_scoped_release release;
      return Unwrap(manager.ReadManifest(step));
    }();
    return ManifestDict(manifest);
  }

  py::dict Restore(const std::filesystem::path& folder, std::optional<int64_t> step, std::optional<int> rank,
                   bool replace) {
    CheckpointManager& manager = Get();
    const ExistingFolder existing = replace ? ExistingFolder::kReplace : ExistingFolder::kReplaceOnlyRestores;
    CheckpointManifest manifest = [&] {
      py::gil_scoped_release release;
      if (!step) step = Unwrap(manager.Latest());
      if (!step) return Unwrap(manager.RestoreLatest(folder, existing));  // NotFound naming the root
      if (rank) return Unwrap(manager.RestoreRank(*step, *rank, folder, existing));
      return Unwrap(manager.Restore(*step, folder, existing));
    }();
    return ManifestDict(manifest);
  }

 private:
  CheckpointManager& Get() {
    owner_.CheckNotForked("the CheckpointManager");
    if (!manager_) throw StatusError(FailedPreconditionError("the CheckpointManager is closed"));
    return *manager_;
  }
  ProcessOwner owner_;
  std::unique_ptr<CheckpointManager> manager_;
};

// A source from what Python passes: a folder (its symbolic links followed
// only with `follow_symlinks`, as CheckpointSource::Symlinks says), and/or
// files and buffers by their path inside the checkpoint.
CheckpointSource MakeSource(std::optional<std::filesystem::path> folder,
                            const std::map<std::string, std::filesystem::path>& files,
                            const std::map<std::string, py::bytes>& buffers, bool follow_symlinks) {
  CheckpointSource source;
  if (folder) {
    source = Unwrap(CheckpointSource::FromFolder(
        *folder, follow_symlinks ? CheckpointSource::Symlinks::kFollow : CheckpointSource::Symlinks::kInsideFolder));
  }
  for (const auto& [path, file] : files) source.AddFile(path, file);
  for (const auto& [path, bytes] : buffers) source.AddBuffer(path, std::string(bytes));
  ThrowIfError(source.Validate());
  if (source.empty()) throw StatusError(InvalidArgumentError("nothing to save: the checkpoint source is empty"));
  return source;
}

}  // namespace

void RegisterCheckpoints(py::module_& m) {
  py::class_<CheckpointSource>(m, "_CheckpointSource");
  m.def("_checkpoint_source", &MakeSource, py::arg("folder"), py::arg("files"), py::arg("buffers"),
        py::arg("follow_symlinks"));
  py::class_<Manager>(m, "_CheckpointManager")
      .def(py::init<const std::string&, int, int, int, int64_t, double, std::string, double, bool, bool, int>(),
           py::arg("root"), py::arg("rank"), py::arg("world_size"), py::arg("keep_last"), py::arg("save_every_steps"),
           py::arg("save_every_seconds"), py::arg("attempt"), py::arg("part_timeout_seconds"),
           py::arg("copy_on_capture"), py::arg("clean_stale_parts"), py::arg("rank_prefix_fanout"))
      .def("close", &Manager::Close)
      .def("stats", &Manager::Stats)
      .def("should_save", &Manager::ShouldSave, py::arg("step"))
      .def("save", &Manager::Save, py::arg("step"), py::arg("source"), py::arg("metadata"))
      .def("save_async", &Manager::SaveAsync, py::arg("step"), py::arg("source"), py::arg("metadata"))
      .def("wait", &Manager::Wait)
      .def("save_in_flight", &Manager::SaveInFlight)
      .def("latest", &Manager::Latest)
      .def("list", &Manager::List)
      .def("read_manifest", &Manager::ReadManifest, py::arg("step"))
      .def("restore", &Manager::Restore, py::arg("folder"), py::arg("step"), py::arg("rank"), py::arg("replace"));
}

}  // namespace spool::python
