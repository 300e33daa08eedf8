#include "spool/records/feature_spec.h"

#include <algorithm>
#include <limits>
#include <set>

#include "spool/records/example.h"

namespace spool::records {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

FeatureKind KindFor(FeatureDtype dtype) {
  switch (dtype) {
    case FeatureDtype::kFloat32:
    case FeatureDtype::kFloat64: return FeatureKind::kFloat;
    case FeatureDtype::kInt64:
    case FeatureDtype::kInt32:
    case FeatureDtype::kUint8: return FeatureKind::kInt64;
    case FeatureDtype::kBytes: return FeatureKind::kBytes;
  }
  return FeatureKind::kNone;
}

std::string Where(const FeatureSpec& spec, size_t example) {
  return "feature '" + spec.name + "' of example " + std::to_string(example) + " in the batch";
}

// The feature of that name, or null when the example lacks it.
const tensorflow::Feature* Find(const tensorflow::Example& example, const std::string& name) {
  const auto& map = example.features().feature();
  auto it = map.find(name);
  return it == map.end() ? nullptr : &it->second;
}

// Checks kind and count; null with OK status when the example lacks the
// feature (the caller then uses the default).
Result<const tensorflow::Feature*> Lookup(const tensorflow::Example& example, const FeatureSpec& spec,
                                          size_t index) {
  const tensorflow::Feature* feature = Find(example, spec.name);
  // A Feature with no list set is a missing one for a fixed-length feature,
  // as TensorFlow's FixedLenFeature parsing has it: the default applies.
  if (feature != nullptr && KindOf(*feature) == FeatureKind::kNone) feature = nullptr;
  if (feature == nullptr) {
    if (std::holds_alternative<std::monostate>(spec.default_value)) {
      return InvalidArgumentError(Where(spec, index) + " is missing and the spec gives no default");
    }
    return feature;
  }
  const FeatureKind have = KindOf(*feature);
  const FeatureKind want = KindFor(spec.dtype);
  if (have != want) {
    return InvalidArgumentError(Where(spec, index) + " is stored as " + std::string(FeatureKindName(have)) +
                                "; dtype " + std::string(FeatureDtypeName(spec.dtype)) + " reads " +
                                std::string(FeatureKindName(want)));
  }
  int count = 0;
  switch (have) {
    case FeatureKind::kBytes: count = feature->bytes_list().value_size(); break;
    case FeatureKind::kFloat: count = feature->float_list().value_size(); break;
    case FeatureKind::kInt64: count = feature->int64_list().value_size(); break;
    case FeatureKind::kNone: break;  // handled above
  }
  if (static_cast<uint64_t>(count) != spec.elements()) {
    return InvalidArgumentError(Where(spec, index) + " has " + std::to_string(count) + " values; the spec's shape " +
                                ShapeText(spec.shape) + " needs " + std::to_string(spec.elements()));
  }
  return feature;
}

template <typename Out>
Status FillFromInts(std::span<const tensorflow::Example> examples, const FeatureSpec& spec, Out* out) {
  const uint64_t n = spec.elements();
  const auto fits = [](int64_t v) {
    return v >= static_cast<int64_t>(std::numeric_limits<Out>::min()) &&
           v <= static_cast<int64_t>(std::numeric_limits<Out>::max());
  };
  for (size_t i = 0; i < examples.size(); ++i, out += n) {
    SPOOL_ASSIGN_OR_RETURN(const tensorflow::Feature* feature, Lookup(examples[i], spec, i));
    if (feature == nullptr) {
      const int64_t fill = std::holds_alternative<int64_t>(spec.default_value)
                               ? std::get<int64_t>(spec.default_value)
                               : static_cast<int64_t>(std::get<double>(spec.default_value));
      if (!fits(fill)) return InvalidArgumentError("the default of feature '" + spec.name + "' does not fit " +
                                                   std::string(FeatureDtypeName(spec.dtype)));
      std::fill(out, out + n, static_cast<Out>(fill));
      continue;
    }
    const auto& values = feature->int64_list().value();
    for (uint64_t j = 0; j < n; ++j) {
      const int64_t v = values[static_cast<int>(j)];
      if (!fits(v)) {
        return InvalidArgumentError(Where(spec, i) + " holds " + std::to_string(v) + ", which does not fit " +
                                    std::string(FeatureDtypeName(spec.dtype)) + "; declare it int64");
      }
      out[j] = static_cast<Out>(v);
    }
  }
  return OkStatus();
}

template <typename Out>
Status FillFromFloats(std::span<const tensorflow::Example> examples, const FeatureSpec& spec, Out* out) {
  const uint64_t n = spec.elements();
  for (size_t i = 0; i < examples.size(); ++i, out += n) {
    SPOOL_ASSIGN_OR_RETURN(const tensorflow::Feature* feature, Lookup(examples[i], spec, i));
    if (feature == nullptr) {
      const double fill = std::holds_alternative<double>(spec.default_value)
                              ? std::get<double>(spec.default_value)
                              : static_cast<double>(std::get<int64_t>(spec.default_value));
      std::fill(out, out + n, static_cast<Out>(fill));
      continue;
    }
    const auto& values = feature->float_list().value();
    for (uint64_t j = 0; j < n; ++j) out[j] = static_cast<Out>(values[static_cast<int>(j)]);
  }
  return OkStatus();
}

}  // namespace

std::string_view FeatureDtypeName(FeatureDtype dtype) {
  switch (dtype) {
    case FeatureDtype::kFloat32: return "float32";
    case FeatureDtype::kFloat64: return "float64";
    case FeatureDtype::kInt64: return "int64";
    case FeatureDtype::kInt32: return "int32";
    case FeatureDtype::kUint8: return "uint8";
    case FeatureDtype::kBytes: return "bytes";
  }
  return "bytes";
}

Result<FeatureDtype> ParseFeatureDtype(std::string_view text) {
  for (FeatureDtype dtype : {FeatureDtype::kFloat32, FeatureDtype::kFloat64, FeatureDtype::kInt64,
                             FeatureDtype::kInt32, FeatureDtype::kUint8, FeatureDtype::kBytes}) {
    if (text == FeatureDtypeName(dtype)) return dtype;
  }
  return InvalidArgumentError("feature dtype '" + std::string(text) +
                              "' is not one of float32, float64, int64, int32, uint8, bytes");
}

size_t FeatureDtypeSize(FeatureDtype dtype) {
  switch (dtype) {
    case FeatureDtype::kFloat32: return 4;
    case FeatureDtype::kFloat64: return 8;
    case FeatureDtype::kInt64: return 8;
    case FeatureDtype::kInt32: return 4;
    case FeatureDtype::kUint8: return 1;
    case FeatureDtype::kBytes: return 0;
  }
  return 0;
}

uint64_t FeatureSpec::elements() const {
  uint64_t n = 1;
  for (int64_t dim : shape) n *= static_cast<uint64_t>(dim);
  return n;
}

Status CheckFeatureSpecs(std::span<const FeatureSpec> specs) {
  std::set<std::string_view> names;
  for (const FeatureSpec& spec : specs) {
    if (spec.name.empty()) return InvalidArgumentError("a feature spec has an empty name");
    if (!names.insert(spec.name).second) {
      return InvalidArgumentError("feature '" + spec.name + "' is declared twice in the spec");
    }
    for (int64_t dim : spec.shape) {
      if (dim < 0) {
        return InvalidArgumentError("feature '" + spec.name + "' has shape " + ShapeText(spec.shape) +
                                    "; dimensions must be fixed and not negative");
      }
    }
    const bool bytes = spec.dtype == FeatureDtype::kBytes;
    const bool string_default = std::holds_alternative<std::string>(spec.default_value);
    const bool no_default = std::holds_alternative<std::monostate>(spec.default_value);
    if (!no_default && bytes != string_default) {
      return InvalidArgumentError("feature '" + spec.name + "': a " + std::string(FeatureDtypeName(spec.dtype)) +
                                  " feature needs a " + (bytes ? "bytes" : "numeric") + " default");
    }
  }
  return OkStatus();
}

Status DecodeFeature(std::span<const tensorflow::Example> examples, const FeatureSpec& spec, void* out) {
  switch (spec.dtype) {
    case FeatureDtype::kFloat32: return FillFromFloats(examples, spec, static_cast<float*>(out));
    case FeatureDtype::kFloat64: return FillFromFloats(examples, spec, static_cast<double*>(out));
    case FeatureDtype::kInt64: return FillFromInts(examples, spec, static_cast<int64_t*>(out));
    case FeatureDtype::kInt32: return FillFromInts(examples, spec, static_cast<int32_t*>(out));
    case FeatureDtype::kUint8: return FillFromInts(examples, spec, static_cast<uint8_t*>(out));
    case FeatureDtype::kBytes: break;
  }
  return InvalidArgumentError("feature '" + spec.name + "' is bytes; decode it with DecodeBytesFeature");
}

Status DecodeBytesFeature(std::span<const tensorflow::Example> examples, const FeatureSpec& spec,
                          std::vector<std::string>& out) {
  if (spec.dtype != FeatureDtype::kBytes) {
    return InvalidArgumentError("feature '" + spec.name + "' is numeric; decode it with DecodeFeature");
  }
  const uint64_t n = spec.elements();
  out.clear();
  out.reserve(examples.size() * n);
  for (size_t i = 0; i < examples.size(); ++i) {
    SPOOL_ASSIGN_OR_RETURN(const tensorflow::Feature* feature, Lookup(examples[i], spec, i));
    if (feature == nullptr) {
      out.insert(out.end(), n, std::get<std::string>(spec.default_value));
      continue;
    }
    for (const std::string& value : feature->bytes_list().value()) out.push_back(value);
  }
  return OkStatus();
}

}  // namespace spool::records
