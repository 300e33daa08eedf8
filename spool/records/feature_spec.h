// FeatureSpec: a declared layout of tf.train.Example features, and the
// decoding of a batch of Examples into dense arrays by it -- what
// TensorFlow's `tf.io.parse_example` does with `FixedLenFeature`s.
//
//   FeatureSpec pixels{"pixels", FeatureDtype::kFloat32, {8, 8}};
//   FeatureSpec label{"label", FeatureDtype::kInt64, {}};
//   std::vector<float> out(examples.size() * pixels.elements());
//   SPOOL_RETURN_IF_ERROR(DecodeFeature(examples, pixels, out.data()));
//
// Numeric features fill a caller's buffer of batch x elements() values of
// the spec's dtype, row-major, with no allocation per value: float32/float64
// come from a float_list, int64/int32/uint8 from an int64_list (a value that
// does not fit the narrower type is an error, never wrapped). Bytes features
// give one string per element. A feature missing from an Example, or present
// with no list set (as TensorFlow's FixedLenFeature has it), takes the spec's
// default (one value repeated over the shape) or is an error.
//
// Errors are InvalidArgument (the data does not match the spec) and name the
// feature, the example's index in the batch and what was found instead.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "spool/core/status.h"
#include "spool/records/example.pb.h"

namespace spool::records {

enum class FeatureDtype { kFloat32, kFloat64, kInt64, kInt32, kUint8, kBytes };

// "float32", "float64", "int64", "int32", "uint8", "bytes" (NumPy's names).
std::string_view FeatureDtypeName(FeatureDtype dtype);
// InvalidArgument naming `text` and the accepted names.
Result<FeatureDtype> ParseFeatureDtype(std::string_view text);
// Bytes per value of a numeric dtype (0 for kBytes).
size_t FeatureDtypeSize(FeatureDtype dtype);

struct FeatureSpec {
  std::string name;
  FeatureDtype dtype = FeatureDtype::kFloat32;
  std::vector<int64_t> shape;  // fixed; empty: one value per example
  // Used when an Example lacks the feature: an int64 or double for numeric
  // dtypes (repeated over the shape), a string for bytes. monostate: required.
  std::variant<std::monostate, int64_t, double, std::string> default_value;

  // Values per example: the product of the shape (1 for a scalar).
  uint64_t elements() const;
};

// InvalidArgument when the spec itself is unusable (empty name, negative
// dimension, a default of the wrong kind, a repeated name in `specs`).
Status CheckFeatureSpecs(std::span<const FeatureSpec> specs);

// Decodes the numeric feature `spec` of every example into `out`, which
// holds examples.size() * spec.elements() values of spec.dtype.
Status DecodeFeature(std::span<const tensorflow::Example> examples, const FeatureSpec& spec, void* out);

// Decodes the bytes feature `spec`: examples.size() * spec.elements() strings.
Status DecodeBytesFeature(std::span<const tensorflow::Example> examples, const FeatureSpec& spec,
                          std::vector<std::string>& out);

}  // namespace spool::records
