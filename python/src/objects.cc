// Objects: stat, ls, rm, copy, the reader/writer behind spool.open(), and
// the CRC32C that spool checks objects with.
//
// Every call that may wait on the network or the disk releases the GIL; the
// arguments are copied into C++ values first, so no Python object is touched
// without it. Readers and writers are used by one Python thread at a time
// (the io classes in spool/objects.py serialise them).
//
// Fork (process.h): a reader opened before fork() reopens its object in the
// child, pinned to the same version; a writer cannot be used in the child and
// is left to the parent (neither committed nor aborted by the child).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings.h"
#include "process.h"
#include "spool/core/crc32c.h"
#include "spool/core/storage/listing.h"
#include "spool/core/storage/registry.h"
#include "spool/core/storage/transfer.h"
#include "spool/core/url.h"

namespace py = pybind11;

namespace spool::python {
namespace {

double EpochSeconds(std::chrono::system_clock::time_point time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

py::dict InfoDict(const ObjectStore& store, const ObjectInfo& info) {
  py::dict out;
  out["url"] = store.Describe(info.key);
  out["key"] = info.key;
  out["size"] = info.size;
  out["mtime"] = EpochSeconds(info.updated);
  out["version"] = info.version;
  out["crc32c"] = info.crc32c ? py::cast(*info.crc32c) : py::none();
  return out;
}

// An object opened for reading; read_into fills a writable buffer.
class Reader {
 public:
  explicit Reader(std::string url) : url_(std::move(url)) {
    Open();
    pinned_ = object_->info();
  }
  ~Reader() {
    if (owner_.Forked()) Abandon(std::pair(std::move(object_), std::move(location_)));
  }
  uint64_t size() { return Object().info().size; }
  std::string url() const { return location_.store ? location_.store->Describe(location_.key) : url_; }

  // Reads at `offset` into `buffer`; returns the bytes read (0 at the end).
  // part_size asks for parts smaller than the reader's (0: the reader's).
  size_t ReadInto(uint64_t offset, py::buffer buffer, uint64_t part_size) {
    ReadableObject& object = Object();
    py::buffer_info view = buffer.request(/*writable=*/true);
    std::span<char> target(static_cast<char*>(view.ptr), static_cast<size_t>(view.size * view.itemsize));
    uint64_t size = object.info().size;
    if (offset >= size || target.empty()) return 0;
    if (target.size() > size - offset) target = target.first(static_cast<size_t>(size - offset));
    TransferOptions options;
    options.part_size = part_size;
    py::gil_scoped_release release;
    // Large reads are split into parallel ranged requests.
    return Unwrap(ReadParallel(object, offset, target, options));
  }

  // The object from `offset` to its end as one bytes object, filled in place
  // in parallel ranged requests: what readall() returns, without the copy
  // from a buffer into bytes (a whole object held twice).
  py::bytes ReadAll(uint64_t offset) {
    ReadableObject& object = Object();
    const uint64_t size = object.info().size;
    const size_t length = offset >= size ? 0 : static_cast<size_t>(size - offset);
    PyObject* raw = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(length));
    if (raw == nullptr) throw py::error_already_set();
    py::bytes out = py::reinterpret_steal<py::bytes>(raw);
    if (length == 0) return out;
    std::span<char> target(PyBytes_AS_STRING(raw), length);
    size_t got = 0;
    {
      py::gil_scoped_release release;
      got = Unwrap(ReadParallel(object, offset, target));
    }
    if (got < length) return py::bytes(PyBytes_AS_STRING(raw), got);  // the object ended early
    return out;
  }

 private:
  void Open() {
    location_ = OpenUrl(url_);
    py::gil_scoped_release release;
    object_ = Unwrap(location_.store->OpenRead(location_.key));
  }
  // The object, reopened first in a child forked since it was opened: the
  // parent's store and connections stay untouched, and the version opened
  // before the fork is read through a store of this process.
  ReadableObject& Object() {
    if (!owner_.Forked()) return *object_;
    if (object_) Abandon(std::pair(std::move(object_), std::move(location_)));
    Open();  // on an error (here or below), the next call tries again
    const ObjectInfo now = object_->info();
    if (now.size != pinned_.size || now.version != pinned_.version) {
      object_.reset();
      throw StatusError(FailedPreconditionError(url() + " changed since it was opened before fork() (version " +
                                                pinned_.version + ", now " + now.version + ")"));
    }
    owner_ = ProcessOwner();
    return *object_;
  }

  std::string url_;
  ProcessOwner owner_;
  StoreLocation location_;
  std::unique_ptr<ReadableObject> object_;
  ObjectInfo pinned_;  // what was opened first
};

// An object being written: nothing is visible until close() succeeds.
class Writer {
 public:
  explicit Writer(const std::string& url) {
    location_ = OpenUrl(url);
    py::gil_scoped_release release;
    object_ = Unwrap(location_.store->OpenWrite(location_.key));
  }
  ~Writer() {
    if (owner_.Forked()) {
      Abandon(std::pair(std::move(object_), std::move(location_)));
    } else if (object_) {
      py::gil_scoped_release release;
      object_->Abort();
    }
  }
  size_t Write(py::buffer buffer) {
    WritableObject& object = Get();
    py::buffer_info view = buffer.request();
    std::string_view data(static_cast<const char*>(view.ptr), static_cast<size_t>(view.size * view.itemsize));
    Status status;
    {
      py::gil_scoped_release release;
      status = object.Append(data);
      // A failed append aborts at once: a later close() must not commit a
      // partial object.
      if (!status.ok()) Discard(status);
    }
    ThrowIfError(status);
    return data.size();
  }
  py::dict Close() {
    std::unique_ptr<WritableObject> object;
    Get();
    object = std::move(object_);
    Result<ObjectInfo> info = [&] {
      py::gil_scoped_release release;
      Result<ObjectInfo> closed = object->Close();
      object.reset();  // after a failed close: aborts, without the GIL
      return closed;
    }();
    if (!info.ok()) failed_ = info.status();
    return InfoDict(*location_.store, Unwrap(std::move(info)));
  }
  void Abort() {
    if (!object_ || owner_.Forked()) return;  // the parent's upload is the parent's to abort
    std::unique_ptr<WritableObject> object = std::move(object_);
    py::gil_scoped_release release;
    object->Abort();
  }
  std::string url() const { return location_.store->Describe(location_.key); }

 private:
  WritableObject& Get() {
    owner_.CheckNotForked("the writer of " + url());
    if (!failed_.ok()) throw StatusError(FailedPreconditionError(url() + " was not written: " + failed_.ToString()));
    if (!object_) throw StatusError(FailedPreconditionError(url() + " is closed"));
    return *object_;
  }
  // Without the GIL.
  void Discard(const Status& why) {
    failed_ = why;
    std::unique_ptr<WritableObject> object = std::move(object_);
    object->Abort();
  }

  ProcessOwner owner_;
  StoreLocation location_;
  std::unique_ptr<WritableObject> object_;
  Status failed_;  // the error that discarded the object
};

py::dict Stat(const std::string& url) {
  StoreLocation location = OpenUrl(url);
  ObjectInfo info = [&] {
    py::gil_scoped_release release;
    return Unwrap(location.store->Stat(location.key));
  }();
  return InfoDict(*location.store, info);
}

// What `spool ls` shows for a URL, by the same rule (ListNamed in
// spool/core/storage/listing.h): a folder's objects and subfolders ("url/"
// entries; with `recursive`, every object below it), an object, or, for a
// name that is both, the object and its folder entry.
py::list List(const std::string& url, bool recursive) {
  StoreLocation location = OpenUrl(url);
  std::vector<std::pair<ObjectInfo, bool>> entries;  // and whether each is a folder
  {
    py::gil_scoped_release release;
    ThrowIfError(ListNamed(*location.store, location.key, recursive, [&entries](const ObjectInfo& info, bool folder) {
      entries.emplace_back(info, folder);
      return OkStatus();
    }));
  }
  py::list out;
  for (const auto& [info, folder] : entries) {
    if (!folder) {
      out.append(InfoDict(*location.store, info));
      continue;
    }
    py::dict entry;
    entry["url"] = location.store->Describe(info.key);
    entry["key"] = info.key;
    entry["size"] = py::none();
    entry["mtime"] = py::none();
    entry["version"] = py::none();
    entry["crc32c"] = py::none();
    out.append(entry);
  }
  return out;
}

void Remove(const std::string& url) {
  StoreLocation location = OpenUrl(url);
  py::gil_scoped_release release;
  ThrowIfError(location.store->Stat(location.key).status());  // a missing object is an error here, as in `spool rm`
  ThrowIfError(location.store->Delete(location.key));
}

// The last '/'-separated part of `key`, as `spool cp` names a copy in a folder.
std::string BaseName(std::string_view key) {
  while (key.ends_with('/')) key.remove_suffix(1);
  size_t slash = key.rfind('/');
  return std::string(slash == std::string_view::npos ? key : key.substr(slash + 1));
}

py::dict Copy(const std::string& from_url, const std::string& to_url, bool fsync) {
  StoreLocation from = OpenUrl(from_url);
  StoreLocation to = OpenUrl(to_url);
  ObjectInfo info = [&] {
    py::gil_scoped_release release;
    // A folder destination (a trailing '/', the bucket itself, or an existing
    // local directory) gets the object under its base name, as `spool cp` does.
    std::error_code ignored;
    const bool into_folder = to.key.empty() || to.key.ends_with('/') ||
                             (to.url.scheme == "file" && std::filesystem::is_directory("/" + to.key, ignored));
    if (into_folder) {
      const std::string name = BaseName(from.key);
      if (name.empty()) {
        throw StatusError(InvalidArgumentError(from.store->Describe(from.key) +
                                               " names a folder, not an object; copy its objects one by one"));
      }
      to.key = JoinKey(to.key, name);
    }
    TransferOptions transfer;
    transfer.durable = fsync;
    return Unwrap(CopyObjectBetween({from.store.get(), from.key, from.url.scheme == "file"},
                                    {to.store.get(), to.key, to.url.scheme == "file"}, transfer));
  }();
  info.key = to.key;  // a download reports the source's info
  return InfoDict(*to.store, info);
}

// CRC32C of a bytes-like object, continuing `crc` (0 to start); the GIL is
// released while it runs (the buffer stays held by the view).
uint32_t Crc32c(py::buffer buffer, uint32_t crc) {
  py::buffer_info view = buffer.request();
  const void* data = view.ptr;
  const size_t size = static_cast<size_t>(view.size * view.itemsize);
  py::gil_scoped_release release;
  return crc32c::Extend(crc, data, size);
}

}  // namespace

void RegisterObjects(py::module_& m) {
  py::class_<Reader>(m, "_Reader")
      .def(py::init<std::string>(), py::arg("url"))
      .def_property_readonly("size", &Reader::size)
      .def_property_readonly("url", &Reader::url)
      .def("read_into", &Reader::ReadInto, py::arg("offset"), py::arg("buffer"), py::arg("part_size") = 0)
      .def("read_all", &Reader::ReadAll, py::arg("offset"));
  py::class_<Writer>(m, "_Writer")
      .def(py::init<const std::string&>(), py::arg("url"))
      .def_property_readonly("url", &Writer::url)
      .def("write", &Writer::Write, py::arg("data"))
      .def("close", &Writer::Close)
      .def("abort", &Writer::Abort);
  m.def("stat", &Stat, py::arg("url"));
  m.def("ls", &List, py::arg("url"), py::arg("recursive") = false);
  m.def("rm", &Remove, py::arg("url"));
  m.def("copy", &Copy, py::arg("src"), py::arg("dst"), py::arg("fsync") = false);
  m.def("_crc32c", &Crc32c, py::arg("data"), py::arg("crc") = 0);
}

}  // namespace spool::python
