// TFRecord files for spool/records.py: RecordWriter, RecordReader, the
// ShardedWriter (shards plus "<prefix>.manifest.json", as `spool convert`
// writes them) and _write_manifest (the manifest of shards that other
// processes wrote, as `spool records manifest` writes it, for a driver that
// commits what its executors wrote).
//
// Each record call copies its bytes while holding the GIL and releases it
// for the framing, compression and I/O. The objects are used by one Python
// thread at a time (records.py serialises nothing; the docs say so). Opened
// before fork(), they cannot be used in the child and are left to the parent
// there (process.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "arrow_examples.h"
#include "bindings.h"
#include "process.h"
#include "spool/records/compression.h"
#include "spool/records/manifest.h"
#include "spool/records/record_reader.h"
#include "spool/records/record_writer.h"
#include "spool/records/sharded_writer.h"

namespace py = pybind11;

namespace spool::python {
namespace {

using records::Compression;

// None: from the URL's extension (.gz, .zlib), as TensorFlow's tools do.
std::optional<Compression> ParseCompressionArg(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return Unwrap(records::ParseCompression(*name));
}

std::string_view BufferView(const py::buffer& buffer, py::buffer_info& view) {
  view = buffer.request();
  return {static_cast<const char*>(view.ptr), static_cast<size_t>(view.size * view.itemsize)};
}

class RecordWriter {
 public:
  RecordWriter(const std::string& url, std::optional<std::string> compression, const std::string& compression_level,
               bool write_index) {
    records::RecordWriterOptions options;
    options.compression = ParseCompressionArg(compression);
    options.compression_level = Unwrap(records::Deflater::ParseLevel(compression_level));
    location_ = OpenUrl(url);
    options.write_index = write_index;
    py::gil_scoped_release release;
    writer_ = Unwrap(records::RecordWriter::Open(*location_.store, location_.key, options));
  }
  ~RecordWriter() {
    if (owner_.Forked()) {
      Abandon(std::pair(std::move(writer_), std::move(location_)));
    } else if (writer_) {
      py::gil_scoped_release release;
      writer_.reset();  // aborts: nothing is published
    }
  }

  void Write(const py::buffer& record) {
    records::RecordWriter& writer = Get();
    py::buffer_info view;
    std::string_view data = BufferView(record, view);
    py::gil_scoped_release release;
    ThrowIfError(writer.Write(data));
  }

  // One record per row of Arrow columns (arrow_examples.h), all without the GIL.
  int64_t WriteArrowExamples(const py::list& columns) {
    records::RecordWriter& writer = Get();
    const ArrowColumns arrow = ArrowColumnsFrom(columns);  // its views are released with the GIL, on return
    Status written;
    {
      py::gil_scoped_release release;
      written = EncodeArrowRows(arrow, [&](std::string_view record) { return writer.Write(record); });
    }
    ThrowIfError(written);
    return arrow.rows;
  }

  py::dict Close() {
    records::RecordWriter& writer = Get();
    Result<records::WrittenFile> written = [&] {
      py::gil_scoped_release release;
      return writer.Close();
    }();
    writer_.reset();  // closed either way: after an error nothing is visible
    records::WrittenFile file = Unwrap(std::move(written));
    py::dict out;
    out["url"] = file.url;
    out["records"] = file.records;
    out["payload_bytes"] = file.payload_bytes;
    out["bytes"] = file.bytes;
    out["crc32c"] = file.crc32c;
    return out;
  }

  void Abort() {
    if (!writer_ || owner_.Forked()) return;
    std::unique_ptr<records::RecordWriter> writer = std::move(writer_);
    py::gil_scoped_release release;
    writer->Abort();
  }

  uint64_t records() { return Get().records(); }

 private:
  records::RecordWriter& Get() {
    owner_.CheckNotForked("a RecordWriter");
    if (!writer_) throw StatusError(FailedPreconditionError("the RecordWriter is closed"));
    return *writer_;
  }

  ProcessOwner owner_;
  StoreLocation location_;  // outlives writer_, which uses its store
  std::unique_ptr<records::RecordWriter> writer_;
};

class RecordReader {
 public:
  RecordReader(const std::string& url, std::optional<std::string> compression) {
    location_ = OpenUrl(url);
    records::RecordReaderOptions options;
    options.compression = ParseCompressionArg(compression);
    py::gil_scoped_release release;
    reader_ = Unwrap(records::RecordReader::Open(*location_.store, location_.key, options));
  }
  ~RecordReader() {
    if (owner_.Forked()) {
      Abandon(std::pair(std::move(reader_), std::move(location_)));
    } else if (reader_) {
      py::gil_scoped_release release;
      reader_.reset();  // stops the read-ahead
    }
  }

  // The next record, or None at the end.
  std::optional<py::bytes> Next() {
    records::RecordReader& reader = Get();
    bool more = false;
    {
      py::gil_scoped_release release;
      more = Unwrap(reader.Next(&record_));
    }
    if (!more) return std::nullopt;
    return py::bytes(record_);
  }

  // Up to `count` records (fewer only at the end): one GIL release for many.
  py::list NextBatch(size_t count) {
    records::RecordReader& reader = Get();
    std::vector<std::string> batch;
    {
      py::gil_scoped_release release;
      std::string record;
      while (batch.size() < count && Unwrap(reader.Next(&record))) batch.push_back(std::move(record));
    }
    py::list out;
    for (const std::string& record : batch) out.append(py::bytes(record));
    return out;
  }

  uint64_t NextOffset() { return Get().next_offset(); }

  void Seek(uint64_t offset) {
    records::RecordReader& reader = Get();
    py::gil_scoped_release release;
    ThrowIfError(reader.SeekToOffset(offset));
  }

  void Close() {
    if (!reader_ || owner_.Forked()) return;
    std::unique_ptr<records::RecordReader> reader = std::move(reader_);
    py::gil_scoped_release release;
    reader.reset();
  }

  std::string url() { return Get().url(); }
  std::string compression() { return std::string(records::CompressionName(Get().compression())); }

 private:
  records::RecordReader& Get() {
    owner_.CheckNotForked("a RecordReader");
    if (!reader_) throw StatusError(FailedPreconditionError("the RecordReader is closed"));
    return *reader_;
  }

  ProcessOwner owner_;
  StoreLocation location_;  // outlives reader_
  std::unique_ptr<records::RecordReader> reader_;
  std::string record_;  // reused between records
};

py::dict ManifestDict(const ObjectStore& store, const std::string& manifest_key,
                      const records::DatasetManifest& manifest) {
  std::vector<std::string> keys = records::ShardKeys(manifest_key, manifest);
  py::list shards;
  for (int i = 0; i < manifest.shards_size(); ++i) {
    const records::ShardEntry& shard = manifest.shards(i);
    py::dict entry;
    entry["name"] = shard.name();
    entry["url"] = store.Describe(keys[static_cast<size_t>(i)]);
    entry["records"] = shard.records();
    entry["bytes"] = shard.bytes();
    entry["crc32c"] = shard.crc32c();
    shards.append(entry);
  }
  py::dict out;
  out["url"] = store.Describe(manifest_key);
  out["compression"] = manifest.compression();
  out["shards"] = shards;
  out["total_records"] = manifest.total_records();
  out["total_bytes"] = manifest.total_bytes();
  return out;
}

// A dataset manifest read, parsed and checked (records/manifest.h: format,
// compression, shard names inside its folder, totals): ManifestDict plus
// the schema's (name, kind) features.
py::dict ReadDatasetManifest(const std::string& manifest_url) {
  StoreLocation location = OpenUrl(manifest_url);
  records::DatasetManifest manifest;
  {
    py::gil_scoped_release release;
    manifest = Unwrap(records::ReadManifest(*location.store, location.key));
  }
  py::dict out = ManifestDict(*location.store, location.key, manifest);
  py::list features;
  for (const records::FeatureSchema& feature : manifest.schema().features()) {
    features.append(py::make_tuple(feature.name(), feature.kind()));
  }
  out["features"] = features;
  return out;
}

class ShardedWriter {
 public:
  ShardedWriter(const std::string& prefix_url, int shards, const std::string& compression,
                const std::string& compression_level, uint64_t max_shard_records, uint64_t max_shard_bytes,
                const std::string& suffix, bool write_index, bool by_key, int prefix_fanout) {
    if (shards < 0) throw StatusError(InvalidArgumentError("shards must be 0 (rolled shards) or more"));
    if (by_key && shards == 0) throw StatusError(InvalidArgumentError("by_key needs a fixed number of shards"));
    location_ = OpenUrl(prefix_url);
    records::ShardedWriterOptions options;
    options.num_shards = shards;
    options.assignment = by_key ? records::ShardAssignment::kKeyHash : records::ShardAssignment::kRoundRobin;
    options.max_shard_records = max_shard_records;
    options.max_shard_bytes = max_shard_bytes;
    options.compression = Unwrap(records::ParseCompression(compression));
    options.compression_level = Unwrap(records::Deflater::ParseLevel(compression_level));
    options.suffix = suffix;
    options.write_index = write_index;
    options.prefix_fanout = prefix_fanout;
    py::gil_scoped_release release;
    writer_ = Unwrap(records::ShardedWriter::Open(*location_.store, location_.key, options));
  }
  ~ShardedWriter() {
    if (owner_.Forked()) {
      Abandon(std::pair(std::move(writer_), std::move(location_)));
    } else if (writer_) {
      py::gil_scoped_release release;
      writer_.reset();  // aborts: shards already committed are deleted, no manifest
    }
  }

  void Write(const py::buffer& record, const std::optional<py::buffer>& key) {
    records::ShardedWriter& writer = Get();
    py::buffer_info record_view;
    py::buffer_info key_view;
    std::string_view data = BufferView(record, record_view);
    std::optional<std::string_view> key_data;
    if (key) key_data = BufferView(*key, key_view);
    py::gil_scoped_release release;
    ThrowIfError(key_data ? writer.Write(*key_data, data) : writer.Write(data));
  }

  py::dict Close() {
    records::ShardedWriter& writer = Get();
    Result<records::DatasetManifest> manifest = [&] {
      py::gil_scoped_release release;
      return writer.Close();
    }();
    writer_.reset();
    records::DatasetManifest written = Unwrap(std::move(manifest));
    return ManifestDict(*location_.store, records::ManifestKeyFor(location_.key), written);
  }

  void Abort() {
    if (!writer_ || owner_.Forked()) return;
    std::unique_ptr<records::ShardedWriter> writer = std::move(writer_);
    py::gil_scoped_release release;
    writer->Abort();
  }

 private:
  records::ShardedWriter& Get() {
    owner_.CheckNotForked("a ShardedWriter");
    if (!writer_) throw StatusError(FailedPreconditionError("the ShardedWriter is closed"));
    return *writer_;
  }

  ProcessOwner owner_;
  StoreLocation location_;  // outlives writer_
  std::unique_ptr<records::ShardedWriter> writer_;
};

// `shards`: (url, records, bytes, crc32c, index_url or None) in manifest
// order, each in the folder of "<prefix_url>.manifest.json" or below it.
// `schema`: (name, kind) pairs, kinds as in manifest.proto; None or empty:
// no schema. One PUT, so the manifest appears whole or not at all.
py::dict WriteManifest(const std::string& prefix_url, const std::string& compression, const py::list& shards,
                       const std::optional<std::vector<std::pair<std::string, std::string>>>& schema) {
  StoreLocation location = OpenUrl(prefix_url);
  records::ManifestBuilder builder(records::ManifestKeyFor(location.key),
                                   Unwrap(records::ParseCompression(compression)));
  if (schema && !schema->empty()) {
    records::Schema proto;
    proto.set_message_type("tensorflow.Example");
    for (const auto& [name, kind] : *schema) {
      records::FeatureSchema* feature = proto.add_features();
      feature->set_name(name);
      feature->set_kind(kind);
    }
    builder.SetSchema(std::move(proto));
  }
  for (const py::handle item : shards) {
    const py::tuple shard = item.cast<py::tuple>();
    const std::string key = OpenUrl(shard[0].cast<std::string>()).key;
    const std::string index_key = shard[4].is_none() ? std::string() : OpenUrl(shard[4].cast<std::string>()).key;
    ThrowIfError(builder.AddShard(key, shard[1].cast<uint64_t>(), shard[2].cast<uint64_t>(), shard[3].cast<uint32_t>(),
                                  index_key));
  }
  const records::DatasetManifest manifest = builder.Build();
  const std::string json = Unwrap(records::ManifestToJson(manifest));
  {
    py::gil_scoped_release release;
    ThrowIfError(WriteAll(*location.store, builder.manifest_key(), json).status());
  }
  return ManifestDict(*location.store, builder.manifest_key(), manifest);
}

}  // namespace

void RegisterRecords(py::module_& m) {
  m.def("_read_dataset_manifest", &ReadDatasetManifest, py::arg("manifest_url"));
  m.def("_write_manifest", &WriteManifest, py::arg("prefix_url"), py::arg("compression"), py::arg("shards"),
        py::arg("schema"));
  py::class_<RecordWriter>(m, "_RecordWriter")
      .def(py::init<const std::string&, std::optional<std::string>, const std::string&, bool>(), py::arg("url"),
           py::arg("compression"), py::arg("compression_level"), py::arg("write_index"))
      .def("write", &RecordWriter::Write, py::arg("record"))
      .def("write_arrow_examples", &RecordWriter::WriteArrowExamples, py::arg("columns"))
      .def("close", &RecordWriter::Close)
      .def("abort", &RecordWriter::Abort)
      .def_property_readonly("records", &RecordWriter::records);
  py::class_<RecordReader>(m, "_RecordReader")
      .def(py::init<const std::string&, std::optional<std::string>>(), py::arg("url"), py::arg("compression"))
      .def("next", &RecordReader::Next)
      .def("next_batch", &RecordReader::NextBatch, py::arg("count"))
      .def("seek", &RecordReader::Seek, py::arg("offset"))
      .def("close", &RecordReader::Close)
      .def_property_readonly("next_offset", &RecordReader::NextOffset)
      .def_property_readonly("url", &RecordReader::url)
      .def_property_readonly("compression", &RecordReader::compression);
  py::class_<ShardedWriter>(m, "_ShardedWriter")
      .def(py::init<const std::string&, int, const std::string&, const std::string&, uint64_t, uint64_t,
                    const std::string&, bool, bool, int>(),
           py::arg("prefix_url"), py::arg("shards"), py::arg("compression"), py::arg("compression_level"),
           py::arg("max_shard_records"), py::arg("max_shard_bytes"), py::arg("suffix"), py::arg("write_index"),
           py::arg("by_key"), py::arg("prefix_fanout"))
      .def("write", &ShardedWriter::Write, py::arg("record"), py::arg("key"))
      .def("close", &ShardedWriter::Close)
      .def("abort", &ShardedWriter::Abort);
}

}  // namespace spool::python
