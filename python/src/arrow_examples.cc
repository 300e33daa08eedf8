// Arrow columns to serialized tf.train.Examples (see arrow_examples.h).
#include "arrow_examples.h"

#include <cstring>
#include <string>
#include <utility>

#include "bindings.h"
#include "spool/records/example.h"

namespace py = pybind11;

namespace spool::python {
namespace {

ArrowType ParseType(const std::string& name) {
  static const std::pair<const char*, ArrowType> kTypes[] = {{"int8", ArrowType::kInt8},
                                                             {"int16", ArrowType::kInt16},
                                                             {"int32", ArrowType::kInt32},
                                                             {"int64", ArrowType::kInt64},
                                                             {"uint8", ArrowType::kUInt8},
                                                             {"uint16", ArrowType::kUInt16},
                                                             {"uint32", ArrowType::kUInt32},
                                                             {"uint64", ArrowType::kUInt64},
                                                             {"bool", ArrowType::kBool},
                                                             {"float", ArrowType::kFloat32},
                                                             {"double", ArrowType::kFloat64},
                                                             {"binary", ArrowType::kBinary},
                                                             {"large_binary", ArrowType::kLargeBinary},
                                                             {"list", ArrowType::kList},
                                                             {"large_list", ArrowType::kLargeList}};
  for (const auto& [type_name, type] : kTypes) {
    if (name == type_name) return type;
  }
  throw StatusError(InvalidArgumentError("no Example feature for the Arrow type " + name));
}

bool IsList(ArrowType type) { return type == ArrowType::kList || type == ArrowType::kLargeList; }
bool IsBinary(ArrowType type) { return type == ArrowType::kBinary || type == ArrowType::kLargeBinary; }
bool IsFloat(ArrowType type) { return type == ArrowType::kFloat32 || type == ArrowType::kFloat64; }

// A buffer's bytes (none: null and 0), its view kept in `out`.
struct Bytes {
  const uint8_t* data = nullptr;
  int64_t size = 0;
};

Bytes View(const py::handle buffer, ArrowColumns& out) {
  if (buffer.is_none()) return {};
  out.views.push_back(py::reinterpret_borrow<py::buffer>(buffer).request());
  const py::buffer_info& view = out.views.back();
  return {static_cast<const uint8_t*>(view.ptr), static_cast<int64_t>(view.size * view.itemsize)};
}

int64_t OffsetWidth(ArrowType type) { return type == ArrowType::kLargeList || type == ArrowType::kLargeBinary ? 8 : 4; }

int64_t ValueWidth(ArrowType type) {
  switch (type) {
    case ArrowType::kInt8:
    case ArrowType::kUInt8:
      return 1;
    case ArrowType::kInt16:
    case ArrowType::kUInt16:
      return 2;
    case ArrowType::kInt32:
    case ArrowType::kUInt32:
    case ArrowType::kFloat32:
      return 4;
    default:
      return 8;
  }
}

bool IsValid(const ArrowValues& values, int64_t i) {
  if (!values.validity) return true;
  const int64_t bit = values.offset + i;
  return (values.validity[bit >> 3] >> (bit & 7)) & 1;
}

// [begin, end) of element i of a binary or list array, in its values.
std::pair<int64_t, int64_t> Range(const ArrowValues& values, int64_t i) {
  const int64_t at = values.offset + i;
  if (values.type == ArrowType::kLargeList || values.type == ArrowType::kLargeBinary) {
    int64_t bounds[2];
    std::memcpy(bounds, values.offsets + at * 8, sizeof bounds);
    return {bounds[0], bounds[1]};
  }
  int32_t bounds[2];
  std::memcpy(bounds, values.offsets + at * 4, sizeof bounds);
  return {bounds[0], bounds[1]};
}

ArrowValues ValuesFrom(const py::handle item, ArrowColumns& out) {
  const py::tuple entry = py::reinterpret_borrow<py::tuple>(item);
  if (entry.size() != 6)
    throw StatusError(InvalidArgumentError("an Arrow array is (type, offset, length, validity, offsets, data)"));
  ArrowValues values;
  values.type = ParseType(entry[0].cast<std::string>());
  values.offset = entry[1].cast<int64_t>();
  values.length = entry[2].cast<int64_t>();
  const Bytes validity = View(entry[3], out);
  const Bytes offsets = View(entry[4], out);
  const Bytes data = View(entry[5], out);
  values.validity = validity.data;
  values.offsets = offsets.data;
  values.data = data.data;
  // Every element the encoder reads must lie inside its buffer: a short
  // buffer is an error here, never a read past its end.
  const auto bad = [] { return StatusError(InvalidArgumentError("an Arrow array's buffers do not match its type")); };
  if (values.offset < 0 || values.length < 0) throw bad();
  const int64_t end = values.offset + values.length;
  if (values.validity && validity.size * 8 < end) throw bad();
  if (IsList(values.type) || IsBinary(values.type)) {
    if (!values.offsets || offsets.size < (end + 1) * OffsetWidth(values.type)) throw bad();
    for (int64_t i = 0; i < values.length; ++i) {
      const auto [begin, stop] = Range(values, i);
      if (begin < 0 || stop < begin) throw bad();
      if (IsBinary(values.type) && stop > data.size) throw bad();
    }
  } else if (values.length > 0) {
    const int64_t needed = values.type == ArrowType::kBool ? (end + 7) / 8 : end * ValueWidth(values.type);
    if (!values.data || data.size < needed) throw bad();
  }
  return values;
}

template <typename T>
T Load(const uint8_t* data, int64_t i) {
  T value;
  std::memcpy(&value, data + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return value;
}

int64_t Int64At(const ArrowValues& values, int64_t i) {
  const int64_t at = values.offset + i;
  switch (values.type) {
    case ArrowType::kInt8:
      return Load<int8_t>(values.data, at);
    case ArrowType::kInt16:
      return Load<int16_t>(values.data, at);
    case ArrowType::kInt32:
      return Load<int32_t>(values.data, at);
    case ArrowType::kUInt8:
      return Load<uint8_t>(values.data, at);
    case ArrowType::kUInt16:
      return Load<uint16_t>(values.data, at);
    case ArrowType::kUInt32:
      return Load<uint32_t>(values.data, at);
    case ArrowType::kUInt64:
      return static_cast<int64_t>(Load<uint64_t>(values.data, at));  // checked by SetFeature
    case ArrowType::kBool:
      return (values.data[at >> 3] >> (at & 7)) & 1;
    default:
      return Load<int64_t>(values.data, at);
  }
}

float FloatAt(const ArrowValues& values, int64_t i) {
  const int64_t at = values.offset + i;
  if (values.type == ArrowType::kFloat64) return static_cast<float>(Load<double>(values.data, at));
  return Load<float>(values.data, at);
}

std::string BytesAt(const ArrowValues& values, int64_t i) {
  const auto [begin, end] = Range(values, i);
  if (end == begin) return {};  // an all-empty array may have no data buffer
  return std::string(reinterpret_cast<const char*>(values.data) + begin, static_cast<size_t>(end - begin));
}

// Scratch for one feature's values, kept across rows to reuse its storage.
struct Scratch {
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> bytes;
};

// Sets the feature of elements [begin, end) of `values` (one element for a scalar column).
Status SetFeature(tensorflow::Example& example, const std::string& name, const ArrowValues& values, int64_t begin,
                  int64_t end, Scratch& scratch) {
  if (IsBinary(values.type)) {
    scratch.bytes.clear();
    for (int64_t i = begin; i < end; ++i) scratch.bytes.push_back(BytesAt(values, i));
    records::SetBytes(example, name, scratch.bytes);
  } else if (IsFloat(values.type)) {
    scratch.floats.clear();
    for (int64_t i = begin; i < end; ++i) scratch.floats.push_back(FloatAt(values, i));
    records::SetFloats(example, name, scratch.floats);
  } else {
    scratch.ints.clear();
    for (int64_t i = begin; i < end; ++i) scratch.ints.push_back(Int64At(values, i));
    if (values.type == ArrowType::kUInt64) {
      for (int64_t value : scratch.ints) {
        if (value < 0)
          return InvalidArgumentError("column '" + name + "': a value of 2^63 or more does not fit an int64 feature");
      }
    }
    records::SetInt64s(example, name, scratch.ints);
  }
  return OkStatus();
}

}  // namespace

ArrowColumns ArrowColumnsFrom(const py::list& columns) {
  ArrowColumns out;
  bool first = true;
  for (const py::handle item : columns) {
    const py::tuple entry = py::reinterpret_borrow<py::tuple>(item);
    if (entry.size() != 3) throw StatusError(InvalidArgumentError("an Arrow column is (name, values, items)"));
    ArrowColumn column;
    column.name = entry[0].cast<std::string>();
    column.values = ValuesFrom(entry[1], out);
    if (IsList(column.values.type)) {
      if (entry[2].is_none()) throw StatusError(InvalidArgumentError("list column " + column.name + " has no items"));
      column.items = ValuesFrom(entry[2], out);
      if (IsList(column.items.type)) {
        throw StatusError(InvalidArgumentError("column " + column.name + ": lists of lists have no Example feature"));
      }
      if (column.values.length > 0 && Range(column.values, column.values.length - 1).second > column.items.length) {
        throw StatusError(InvalidArgumentError("list column " + column.name + " has offsets past its items"));
      }
    }
    if (!first && column.values.length != out.rows) {
      throw StatusError(InvalidArgumentError("column " + column.name + " has another length than the first"));
    }
    out.rows = column.values.length;
    first = false;
    out.columns.push_back(std::move(column));
  }
  return out;
}

Status EncodeArrowRows(const ArrowColumns& columns, const std::function<Status(std::string_view)>& sink) {
  std::vector<Scratch> scratch(columns.columns.size());
  for (int64_t row = 0; row < columns.rows; ++row) {
    tensorflow::Example example;
    for (size_t c = 0; c < columns.columns.size(); ++c) {
      const ArrowColumn& column = columns.columns[c];
      if (!IsValid(column.values, row)) continue;  // null: an absent feature
      if (!IsList(column.values.type)) {
        if (Status set = SetFeature(example, column.name, column.values, row, row + 1, scratch[c]); !set.ok()) {
          return set;
        }
        continue;
      }
      const auto [begin, end] = Range(column.values, row);
      for (int64_t i = begin; i < end; ++i) {
        if (!IsValid(column.items, i)) {
          return InvalidArgumentError("column '" + column.name +
                                      "': an array holds a null, which a tf.train.Example list cannot hold; drop "
                                      "or fill the nulls first");
        }
      }
      if (Status set = SetFeature(example, column.name, column.items, begin, end, scratch[c]); !set.ok()) return set;
    }
    if (Status status = sink(records::SerializeExample(example)); !status.ok()) return status;
  }
  return OkStatus();
}

}  // namespace spool::python
