// Arrow columns to tf.train.Example records with no per-row Python: what
// spool.spark.write_records and spool.ray.RecordsDatasink write.
//
// Python (spool/_engine_commit.py) hands each column as its Arrow buffers
// (pa.Array.buffers(), with the array's offset and length), so spool needs
// no libarrow. ArrowColumnsFrom reads them with the GIL held and keeps the
// buffer views; EncodeArrowRows then runs without the GIL. The mapping is
// the engines' one: integers and booleans int64_list, floats float_list,
// (large_)string and (large_)binary bytes_list, (large_)lists of those; a
// null is an absent feature, a null inside a list an InvalidArgument error.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"

namespace spool::python {

enum class ArrowType {
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kBool,
  kFloat32,
  kFloat64,
  kBinary,
  kLargeBinary,
  kList,
  kLargeList
};

// One Arrow array's buffers; pointers into the views that ArrowColumns holds.
struct ArrowValues {
  ArrowType type = ArrowType::kInt64;
  int64_t offset = 0;  // in elements, into every buffer
  int64_t length = 0;
  const uint8_t* validity = nullptr;  // null: no nulls
  const uint8_t* offsets = nullptr;   // binary and list types: int32 or int64 offsets
  const uint8_t* data = nullptr;      // values (bits for kBool, bytes for binary)
};

struct ArrowColumn {
  std::string name;
  ArrowValues values;  // the column; a list type for list columns
  ArrowValues items;   // list columns: the list's values
};

// Columns and the buffer views they point into; the views must be released
// with the GIL held (the owner destroys this with it).
struct ArrowColumns {
  std::vector<ArrowColumn> columns;
  std::vector<pybind11::buffer_info> views;
  int64_t rows = 0;
};

// From a list of (name, values, items) where values and items are
// (type, offset, length, validity, offsets, data) with buffers or None
// (items None for a scalar column). InvalidArgument (as ValueError) for a
// malformed description, columns of unequal lengths or two of one name.
ArrowColumns ArrowColumnsFrom(const pybind11::list& columns);

// Each row's Example, the bytes records::SerializeExample gives (written
// straight from the buffers, arrow_examples.cc says why), handed
// to `sink` in row order; stops at the first error (of the data or of sink).
Status EncodeArrowRows(const ArrowColumns& columns, const std::function<Status(std::string_view)>& sink);

}  // namespace spool::python
