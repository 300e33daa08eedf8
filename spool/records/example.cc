#include "spool/records/example.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>

namespace spool::records {
namespace {

// "(it has: a, b, c)" for NotFound messages; long lists are cut short.
template <typename Map>
std::string NamesIn(const Map& map) {
  std::vector<std::string> names;
  for (const auto& [name, unused] : map) names.push_back(name);
  std::sort(names.begin(), names.end());
  if (names.empty()) return "it has none";
  std::string text = "it has: ";
  constexpr size_t kMaxListed = 20;
  for (size_t i = 0; i < names.size() && i < kMaxListed; ++i) {
    if (i > 0) text += ", ";
    text += names[i];
  }
  if (names.size() > kMaxListed) text += ", ... (" + std::to_string(names.size()) + " in all)";
  return text;
}

Status WrongKind(std::string_view name, FeatureKind have, FeatureKind want) {
  return InvalidArgumentError("feature '" + std::string(name) + "' is a " + std::string(FeatureKindName(have)) +
                              ", not a " + std::string(FeatureKindName(want)) + "; read it with the matching getter");
}

tensorflow::Feature& Replace(tensorflow::Features& features, std::string_view name) {
  tensorflow::Feature& feature = (*features.mutable_feature())[std::string(name)];
  feature.Clear();
  return feature;
}

template <typename Message>
std::string SerializeDeterministic(const Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace

std::string_view FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kNone: return "none";
    case FeatureKind::kBytes: return "bytes_list";
    case FeatureKind::kFloat: return "float_list";
    case FeatureKind::kInt64: return "int64_list";
  }
  return "none";
}

FeatureKind KindOf(const tensorflow::Feature& feature) {
  switch (feature.kind_case()) {
    case tensorflow::Feature::kBytesList: return FeatureKind::kBytes;
    case tensorflow::Feature::kFloatList: return FeatureKind::kFloat;
    case tensorflow::Feature::kInt64List: return FeatureKind::kInt64;
    default: return FeatureKind::kNone;
  }
}

void SetBytes(tensorflow::Features& features, std::string_view name, std::span<const std::string> values) {
  auto* list = Replace(features, name).mutable_bytes_list();
  for (const std::string& value : values) list->add_value(value);
}
void SetBytes(tensorflow::Features& features, std::string_view name,
              std::initializer_list<std::string_view> values) {
  auto* list = Replace(features, name).mutable_bytes_list();
  for (std::string_view value : values) list->add_value(std::string(value));
}
void SetFloats(tensorflow::Features& features, std::string_view name, std::span<const float> values) {
  Replace(features, name).mutable_float_list()->mutable_value()->Add(values.begin(), values.end());
}
void SetInt64s(tensorflow::Features& features, std::string_view name, std::span<const int64_t> values) {
  Replace(features, name).mutable_int64_list()->mutable_value()->Add(values.begin(), values.end());
}
void SetBytes(tensorflow::Example& example, std::string_view name, std::span<const std::string> values) {
  SetBytes(*example.mutable_features(), name, values);
}
void SetBytes(tensorflow::Example& example, std::string_view name, std::initializer_list<std::string_view> values) {
  SetBytes(*example.mutable_features(), name, values);
}
void SetFloats(tensorflow::Example& example, std::string_view name, std::span<const float> values) {
  SetFloats(*example.mutable_features(), name, values);
}
void SetInt64s(tensorflow::Example& example, std::string_view name, std::span<const int64_t> values) {
  SetInt64s(*example.mutable_features(), name, values);
}

Result<const tensorflow::Feature*> GetFeature(const tensorflow::Features& features, std::string_view name) {
  auto it = features.feature().find(std::string(name));
  if (it == features.feature().end()) {
    return NotFoundError("no feature '" + std::string(name) + "' in the Example (" + NamesIn(features.feature()) +
                         ")");
  }
  return &it->second;
}

Result<std::vector<std::string_view>> GetBytes(const tensorflow::Features& features, std::string_view name) {
  SPOOL_ASSIGN_OR_RETURN(const tensorflow::Feature* feature, GetFeature(features, name));
  const FeatureKind kind = KindOf(*feature);
  if (kind != FeatureKind::kBytes && kind != FeatureKind::kNone) return WrongKind(name, kind, FeatureKind::kBytes);
  std::vector<std::string_view> values;
  values.reserve(feature->bytes_list().value_size());
  for (const std::string& value : feature->bytes_list().value()) values.emplace_back(value);
  return values;
}

Result<std::span<const float>> GetFloats(const tensorflow::Features& features, std::string_view name) {
  SPOOL_ASSIGN_OR_RETURN(const tensorflow::Feature* feature, GetFeature(features, name));
  const FeatureKind kind = KindOf(*feature);
  if (kind != FeatureKind::kFloat && kind != FeatureKind::kNone) return WrongKind(name, kind, FeatureKind::kFloat);
  const auto& values = feature->float_list().value();
  return std::span<const float>(values.data(), static_cast<size_t>(values.size()));
}

Result<std::span<const int64_t>> GetInt64s(const tensorflow::Features& features, std::string_view name) {
  SPOOL_ASSIGN_OR_RETURN(const tensorflow::Feature* feature, GetFeature(features, name));
  const FeatureKind kind = KindOf(*feature);
  if (kind != FeatureKind::kInt64 && kind != FeatureKind::kNone) return WrongKind(name, kind, FeatureKind::kInt64);
  const auto& values = feature->int64_list().value();
  return std::span<const int64_t>(reinterpret_cast<const int64_t*>(values.data()),
                                  static_cast<size_t>(values.size()));
}

Result<std::vector<std::string_view>> GetBytes(const tensorflow::Example& example, std::string_view name) {
  return GetBytes(example.features(), name);
}
Result<std::span<const float>> GetFloats(const tensorflow::Example& example, std::string_view name) {
  return GetFloats(example.features(), name);
}
Result<std::span<const int64_t>> GetInt64s(const tensorflow::Example& example, std::string_view name) {
  return GetInt64s(example.features(), name);
}
bool HasFeature(const tensorflow::Example& example, std::string_view name) {
  return example.features().feature().contains(std::string(name));
}

Result<const tensorflow::FeatureList*> GetFeatureList(const tensorflow::SequenceExample& example,
                                                      std::string_view name) {
  const auto& lists = example.feature_lists().feature_list();
  auto it = lists.find(std::string(name));
  if (it == lists.end()) {
    return NotFoundError("no feature list '" + std::string(name) + "' in the SequenceExample (" + NamesIn(lists) +
                         ")");
  }
  return &it->second;
}

Result<tensorflow::Example> ParseExample(std::string_view payload) {
  tensorflow::Example example;
  if (!example.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return DataLossError("the record (" + std::to_string(payload.size()) +
                         " bytes) is not a tf.train.Example; check what the file holds");
  }
  return example;
}

Result<tensorflow::SequenceExample> ParseSequenceExample(std::string_view payload) {
  tensorflow::SequenceExample example;
  if (!example.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return DataLossError("the record (" + std::to_string(payload.size()) +
                         " bytes) is not a tf.train.SequenceExample; check what the file holds");
  }
  return example;
}

std::string SerializeExample(const tensorflow::Example& example) { return SerializeDeterministic(example); }
std::string SerializeSequenceExample(const tensorflow::SequenceExample& example) {
  return SerializeDeterministic(example);
}

}  // namespace spool::records
