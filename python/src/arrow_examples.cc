// Arrow columns to serialized tf.train.Examples (see arrow_examples.h).
#include "arrow_examples.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include <google/protobuf/io/coded_stream.h>

#include "bindings.h"

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

// The wire format of tf.train.Example, written straight from the Arrow
// buffers. Building a tensorflow::Example per row (a map of Features, each a
// message of repeated values) and serializing it deterministically made an
// uncompressed shard's whole write 3-3.7x slower than this: per-row
// allocations, map hashing and the sort of its keys
// (bench/results/2026-11-27T0750Z-engines-direct-encoder.md). The bytes are
// the same: the features in byte order of their names (a deterministic
// map's order), each map entry as key 1 and value 2, packed int64 and float
// lists, and no features message at all for a row whose every column is
// null. Varints are protobuf's own (CodedOutputStream).
//
// Example  { Features features = 1; }
// Features { map<string, Feature> feature = 1; }
// Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
// *List    { repeated value = 1; }  (packed for floats and int64s)
constexpr char kLengthDelimited1 = 0x0a;  // field 1, length-delimited
constexpr char kLengthDelimited2 = 0x12;  // field 2
constexpr char kLengthDelimited3 = 0x1a;  // field 3

size_t VarintSize(uint64_t value) { return google::protobuf::io::CodedOutputStream::VarintSize64(value); }

void PutVarint(std::string& out, uint64_t value) {
  uint8_t bytes[10];  // a varint of 64 bits takes at most 10 bytes
  const uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(value, bytes);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
}

// A length-delimited field's size: tag, length, payload.
size_t FieldSize(size_t payload) { return 1 + VarintSize(payload) + payload; }

void PutFieldHeader(std::string& out, char tag, size_t payload) {
  out.push_back(tag);
  PutVarint(out, payload);
}

enum class FeatureKind { kBytes, kFloat, kInt64 };

FeatureKind KindOf(ArrowType type) {
  if (IsBinary(type)) return FeatureKind::kBytes;
  if (IsFloat(type)) return FeatureKind::kFloat;
  return FeatureKind::kInt64;
}

// One feature of one row: the column's elements [begin, end) of `values`.
struct RowFeature {
  const ArrowColumn* column = nullptr;
  const ArrowValues* values = nullptr;
  int64_t begin = 0;
  int64_t end = 0;
  size_t packed_size = 0;  // int64 and float lists: the packed values' bytes
  size_t list_size = 0;    // the *List message's size
};

// Sizes the feature's list; InvalidArgument for a value an int64 cannot hold.
Status SizeList(RowFeature& feature) {
  const ArrowValues& values = *feature.values;
  const int64_t count = feature.end - feature.begin;
  switch (KindOf(values.type)) {
    case FeatureKind::kBytes: {
      size_t size = 0;
      for (int64_t i = feature.begin; i < feature.end; ++i) {
        const auto [begin, end] = Range(values, i);
        size += FieldSize(static_cast<size_t>(end - begin));
      }
      feature.list_size = size;
      return OkStatus();
    }
    case FeatureKind::kFloat:
      feature.packed_size = static_cast<size_t>(count) * sizeof(float);
      break;
    case FeatureKind::kInt64:
      for (int64_t i = feature.begin; i < feature.end; ++i) {
        const int64_t value = Int64At(values, i);
        if (values.type == ArrowType::kUInt64 && value < 0) {
          return InvalidArgumentError("column '" + feature.column->name +
                                      "': a value of 2^63 or more does not fit an int64 feature");
        }
        feature.packed_size += VarintSize(static_cast<uint64_t>(value));
      }
      break;
  }
  // A packed field with no values is left out altogether.
  feature.list_size = count == 0 ? 0 : FieldSize(feature.packed_size);
  return OkStatus();
}

size_t EntrySize(const RowFeature& feature) {
  return FieldSize(feature.column->name.size()) + FieldSize(FieldSize(feature.list_size));
}

void PutList(std::string& out, const RowFeature& feature) {
  const ArrowValues& values = *feature.values;
  const FeatureKind kind = KindOf(values.type);
  out.push_back(kind == FeatureKind::kBytes   ? kLengthDelimited1
                : kind == FeatureKind::kFloat ? kLengthDelimited2
                                              : kLengthDelimited3);
  PutVarint(out, feature.list_size);
  if (feature.list_size == 0) return;
  switch (kind) {
    case FeatureKind::kBytes:
      for (int64_t i = feature.begin; i < feature.end; ++i) {
        const auto [begin, end] = Range(values, i);
        PutFieldHeader(out, kLengthDelimited1, static_cast<size_t>(end - begin));
        // An all-empty array may have no data buffer at all.
        if (end > begin)
          out.append(reinterpret_cast<const char*>(values.data) + begin, static_cast<size_t>(end - begin));
      }
      return;
    case FeatureKind::kFloat:
      PutFieldHeader(out, kLengthDelimited1, feature.packed_size);
      for (int64_t i = feature.begin; i < feature.end; ++i) {
        const float value = FloatAt(values, i);
        char bytes[sizeof value];
        std::memcpy(bytes, &value, sizeof value);  // little-endian, as protobuf's fixed32
        out.append(bytes, sizeof bytes);
      }
      return;
    case FeatureKind::kInt64:
      PutFieldHeader(out, kLengthDelimited1, feature.packed_size);
      for (int64_t i = feature.begin; i < feature.end; ++i) PutVarint(out, static_cast<uint64_t>(Int64At(values, i)));
      return;
  }
}

// Columns in the order their features are written: by name, byte-wise.
std::vector<const ArrowColumn*> FeatureOrder(const ArrowColumns& columns) {
  std::vector<const ArrowColumn*> sorted;
  for (const ArrowColumn& column : columns.columns) sorted.push_back(&column);
  std::sort(sorted.begin(), sorted.end(), [](const ArrowColumn* a, const ArrowColumn* b) { return a->name < b->name; });
  return sorted;
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
    for (const ArrowColumn& earlier : out.columns) {
      // An Example's features are a map: one value per name.
      if (earlier.name == column.name) {
        throw StatusError(InvalidArgumentError("two columns are named '" + column.name +
                                               "'; rename or drop one (an Example holds one feature per name)"));
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
  const std::vector<const ArrowColumn*> order = FeatureOrder(columns);
  std::vector<RowFeature> features;
  features.reserve(order.size());
  std::string record;  // reused: its capacity stays across rows
  for (int64_t row = 0; row < columns.rows; ++row) {
    features.clear();
    size_t features_size = 0;
    for (const ArrowColumn* next : order) {
      const ArrowColumn& column = *next;
      if (!IsValid(column.values, row)) continue;  // null: an absent feature
      RowFeature feature{.column = &column};
      if (IsList(column.values.type)) {
        std::tie(feature.begin, feature.end) = Range(column.values, row);
        for (int64_t i = feature.begin; i < feature.end; ++i) {
          if (!IsValid(column.items, i)) {
            return InvalidArgumentError("column '" + column.name +
                                        "': an array holds a null, which a tf.train.Example list cannot hold; drop "
                                        "or fill the nulls first");
          }
        }
        feature.values = &column.items;
      } else {
        feature.begin = row;
        feature.end = row + 1;
        feature.values = &column.values;
      }
      SPOOL_RETURN_IF_ERROR(SizeList(feature));
      features_size += FieldSize(EntrySize(feature));
      features.push_back(feature);
    }
    record.clear();
    if (!features.empty()) {
      PutFieldHeader(record, kLengthDelimited1, features_size);
      for (const RowFeature& feature : features) {
        PutFieldHeader(record, kLengthDelimited1, EntrySize(feature));
        PutFieldHeader(record, kLengthDelimited1, feature.column->name.size());
        record.append(feature.column->name);
        PutFieldHeader(record, kLengthDelimited2, FieldSize(feature.list_size));
        PutList(record, feature);
      }
    }
    SPOOL_RETURN_IF_ERROR(sink(record));
  }
  return OkStatus();
}

}  // namespace spool::python
