// The CheckpointManager, for spool/checkpoints.py. Saves, restores and
// waits release the GIL. A source borrows its Python buffers (bytes,
// bytearray, memoryview...): it holds a buffer export of each, so that they
// stay alive and cannot be resized while it exists, and save() uploads them
// without copying; save_async() copies them before it returns. A manager
// opened before fork()
// cannot be used in the child and is left to the parent there (process.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// A Python object's bytes, exported (PyBUF_SIMPLE: contiguous, read-only)
// for as long as this lives; made and destroyed with the GIL held.
class Export {
 public:
  explicit Export(py::handle object) {
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_SIMPLE) != 0) throw py::error_already_set();
  }
  ~Export() { PyBuffer_Release(&view_); }
  Export(const Export&) = delete;
  Export& operator=(const Export&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(view_.buf), static_cast<size_t>(view_.len)}; }

 private:
  Py_buffer view_{};
};

// What Python's _checkpoint_source returns: the source and the exports of
// the buffers it borrows (kept until Python drops it).
struct PySource {
  CheckpointSource source;
  std::vector<std::unique_ptr<Export>> exports;
};

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

  py::dict Save(int64_t step, const PySource& source, std::map<std::string, std::string> metadata) {
    CheckpointManager& manager = Get();
    CheckpointManifest manifest = [&] {
      py::gil_scoped_release release;
      return Unwrap(manager.Save(step, source.source, std::move(metadata)));
    }();
    return ManifestDict(manifest);
  }

  bool SaveAsync(int64_t step, const PySource& source, std::map<std::string, std::string> metadata) {
    CheckpointManager& manager = Get();
    py::gil_scoped_release release;
    // SaveAsync copies the borrowed buffers before it returns.
    AsyncSaveStart start = Unwrap(manager.SaveAsync(step, source.source, std::move(metadata)));
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
// files and buffers (borrowed, see the top) by their path inside the
// checkpoint.
std::unique_ptr<PySource> MakeSource(std::optional<std::filesystem::path> folder,
                                     const std::map<std::string, std::filesystem::path>& files,
                                     const std::map<std::string, py::object>& buffers, bool follow_symlinks) {
  auto out = std::make_unique<PySource>();
  CheckpointSource& source = out->source;
  if (folder) {
    source = Unwrap(CheckpointSource::FromFolder(
        *folder, follow_symlinks ? CheckpointSource::Symlinks::kFollow : CheckpointSource::Symlinks::kInsideFolder));
  }
  for (const auto& [path, file] : files) source.AddFile(path, file);
  for (const auto& [path, object] : buffers) {
    out->exports.push_back(std::make_unique<Export>(object));
    source.AddBufferView(path, out->exports.back()->bytes());
  }
  ThrowIfError(source.Validate());
  if (source.empty()) throw StatusError(InvalidArgumentError("nothing to save: the checkpoint source is empty"));
  return out;
}

}  // namespace

void RegisterCheckpoints(py::module_& m) {
  py::class_<PySource>(m, "_CheckpointSource");
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
