// Feature specs, DecodeExamples, and the module functions
// _decode_examples (spool.parse_example), _encode_example
// (spool.encode_example) and _example_values (every feature of an Example
// with its values, for spool.spark.read_records, which has no fixed shapes).
#include "examples.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>

#include "arrow_examples.h"
#include "bindings.h"
#include "spool/records/example.h"

namespace py = pybind11;

namespace spool::python {
namespace {

using records::FeatureDtype;
using records::FeatureSpec;

py::dtype NumpyDtype(FeatureDtype dtype) { return py::dtype(std::string(records::FeatureDtypeName(dtype))); }

// Bytes values as Python objects: one bytes per element, nested in a list
// per example when the shape is not scalar.
py::list BytesColumn(const std::vector<std::string>& values, size_t examples, uint64_t per_example, bool scalar) {
  py::list column;
  size_t next = 0;
  for (size_t i = 0; i < examples; ++i) {
    if (scalar) {
      column.append(py::bytes(values[next++]));
      continue;
    }
    py::list row;
    for (uint64_t j = 0; j < per_example; ++j) row.append(py::bytes(values[next++]));
    column.append(std::move(row));
  }
  return column;
}

py::dict DecodeRecords(const std::vector<std::string>& records, const py::list& features) {
  std::vector<FeatureSpec> specs = FeatureSpecsFrom(features);
  std::vector<tensorflow::Example> examples(records.size());
  {
    py::gil_scoped_release release;
    for (size_t i = 0; i < records.size(); ++i) {
      Result<tensorflow::Example> parsed = records::ParseExample(records[i]);
      if (!parsed.ok()) {
        throw StatusError(DataLossError("record " + std::to_string(i) + " is not a tf.train.Example"));
      }
      examples[i] = std::move(*parsed);
    }
  }
  return DecodeExamples(examples, specs);
}

// {name: list of int, float or bytes}, every feature of each record: one dict per record.
py::list ExampleValues(const std::vector<std::string>& records) {
  py::list out;
  for (size_t i = 0; i < records.size(); ++i) {
    Result<tensorflow::Example> parsed = records::ParseExample(records[i]);
    if (!parsed.ok()) throw StatusError(DataLossError("record " + std::to_string(i) + " is not a tf.train.Example"));
    py::dict features;
    for (const auto& [name, feature] : parsed->features().feature()) {
      py::list values;
      if (feature.has_int64_list()) {
        for (int64_t v : feature.int64_list().value()) values.append(v);
      } else if (feature.has_float_list()) {
        for (float v : feature.float_list().value()) values.append(static_cast<double>(v));
      } else if (feature.has_bytes_list()) {
        for (const std::string& v : feature.bytes_list().value()) values.append(py::bytes(v));
      }
      features[py::str(name)] = values;
    }
    out.append(features);
  }
  return out;
}

// One feature for _encode_example: (name, kind, values) with kind "int64",
// "float" or "bytes" and values a 1-d array (numeric) or a list of bytes.
void AddFeature(tensorflow::Example& example, const py::tuple& feature) {
  const std::string name = feature[0].cast<std::string>();
  const std::string kind = feature[1].cast<std::string>();
  if (kind == "int64") {
    auto values = feature[2].cast<py::array_t<int64_t, py::array::c_style | py::array::forcecast>>();
    records::SetInt64s(example, name, std::span<const int64_t>(values.data(), static_cast<size_t>(values.size())));
  } else if (kind == "float") {
    auto values = feature[2].cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
    records::SetFloats(example, name, std::span<const float>(values.data(), static_cast<size_t>(values.size())));
  } else {
    records::SetBytes(example, name, feature[2].cast<std::vector<std::string>>());
  }
}

}  // namespace

std::vector<FeatureSpec> FeatureSpecsFrom(const py::list& features) {
  std::vector<FeatureSpec> specs;
  for (const py::handle item : features) {
    const py::tuple entry = item.cast<py::tuple>();
    FeatureSpec spec;
    spec.name = entry[0].cast<std::string>();
    spec.dtype = Unwrap(records::ParseFeatureDtype(entry[1].cast<std::string>()));
    spec.shape = entry[2].cast<std::vector<int64_t>>();
    const py::handle fallback = entry[3];
    if (py::isinstance<py::bytes>(fallback)) {
      spec.default_value = fallback.cast<std::string>();
    } else if (py::isinstance<py::bool_>(fallback) || py::isinstance<py::int_>(fallback)) {
      spec.default_value = fallback.cast<int64_t>();
    } else if (py::isinstance<py::float_>(fallback)) {
      spec.default_value = fallback.cast<double>();
    }
    specs.push_back(std::move(spec));
  }
  ThrowIfError(records::CheckFeatureSpecs(specs));
  return specs;
}

py::dict DecodeExamples(std::span<const tensorflow::Example> examples, const std::vector<FeatureSpec>& specs) {
  // Arrays are made with the GIL, filled without it.
  std::vector<py::array> arrays(specs.size());
  std::vector<void*> targets(specs.size(), nullptr);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].dtype == FeatureDtype::kBytes) continue;
    std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(examples.size())};
    for (int64_t dim : specs[i].shape) shape.push_back(static_cast<py::ssize_t>(dim));
    arrays[i] = py::array(NumpyDtype(specs[i].dtype), shape);
    targets[i] = arrays[i].mutable_data();
  }
  std::vector<std::vector<std::string>> bytes(specs.size());
  Status decoded = OkStatus();
  {
    py::gil_scoped_release release;
    for (size_t i = 0; i < specs.size() && decoded.ok(); ++i) {
      decoded = specs[i].dtype == FeatureDtype::kBytes ? records::DecodeBytesFeature(examples, specs[i], bytes[i])
                                                       : records::DecodeFeature(examples, specs[i], targets[i]);
    }
  }
  ThrowIfError(decoded);
  py::dict out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const py::str name(specs[i].name);
    if (specs[i].dtype == FeatureDtype::kBytes) {
      out[name] = BytesColumn(bytes[i], examples.size(), specs[i].elements(), specs[i].shape.empty());
    } else {
      out[name] = arrays[i];
    }
  }
  return out;
}

void RegisterExamples(py::module_& m) {
  m.def("_decode_examples", &DecodeRecords, py::arg("records"), py::arg("features"));
  m.def("_example_values", &ExampleValues, py::arg("records"));
  // What _RecordWriter.write_arrow_examples writes, as a list of records (for tests).
  m.def(
      "_encode_arrow_examples",
      [](const py::list& columns) {
        const ArrowColumns arrow = ArrowColumnsFrom(columns);
        std::vector<std::string> records;
        ThrowIfError(EncodeArrowRows(arrow, [&](std::string_view record) {
          records.emplace_back(record);
          return OkStatus();
        }));
        py::list out;
        for (const std::string& record : records) out.append(py::bytes(record));
        return out;
      },
      py::arg("columns"));
  m.def(
      "_encode_example",
      [](const py::list& features) {
        tensorflow::Example example;
        for (const py::handle feature : features) AddFeature(example, feature.cast<py::tuple>());
        return py::bytes(records::SerializeExample(example));
      },
      py::arg("features"));
}

}  // namespace spool::python
