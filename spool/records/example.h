// tf.train.Example and SequenceExample: building and reading features by
// name and type.
//
//   tensorflow::Example example;
//   SetInt64s(example, "label", {3});
//   SetFloats(example, "pixels", values);
//   SetBytes(example, "id", {"a17"});
//   std::string payload = SerializeExample(example);
//   ...
//   SPOOL_ASSIGN_OR_RETURN(tensorflow::Example parsed, ParseExample(payload));
//   SPOOL_ASSIGN_OR_RETURN(auto labels, GetInt64s(parsed, "label"));
//
// Getters return views into the message (valid while it lives and is not
// modified). A missing feature is NotFound and a feature of another kind is
// InvalidArgument; both messages name the feature and what there is instead.
// A Feature with no kind set reads as an empty list of any kind here, as in
// TensorFlow's variable-length parsing (FeatureSpec's fixed-length decoding
// treats it as missing instead, as TensorFlow's FixedLenFeature does). Pure
// functions; thread-safe on distinct messages.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/status.h"
#include "spool/records/example.pb.h"
#include "spool/records/sequence_example.pb.h"

namespace spool::records {

enum class FeatureKind { kNone, kBytes, kFloat, kInt64 };

// "none", "bytes_list", "float_list", "int64_list": the oneof field names.
std::string_view FeatureKindName(FeatureKind kind);
FeatureKind KindOf(const tensorflow::Feature& feature);

// Setters replace the feature of that name.
void SetBytes(tensorflow::Features& features, std::string_view name, std::span<const std::string> values);
void SetBytes(tensorflow::Features& features, std::string_view name, std::initializer_list<std::string_view> values);
void SetFloats(tensorflow::Features& features, std::string_view name, std::span<const float> values);
void SetInt64s(tensorflow::Features& features, std::string_view name, std::span<const int64_t> values);
void SetBytes(tensorflow::Example& example, std::string_view name, std::span<const std::string> values);
void SetBytes(tensorflow::Example& example, std::string_view name, std::initializer_list<std::string_view> values);
void SetFloats(tensorflow::Example& example, std::string_view name, std::span<const float> values);
void SetInt64s(tensorflow::Example& example, std::string_view name, std::span<const int64_t> values);
inline void SetFloats(tensorflow::Example& example, std::string_view name, std::initializer_list<float> values) {
  SetFloats(example, name, std::span<const float>(values.begin(), values.size()));
}
inline void SetInt64s(tensorflow::Example& example, std::string_view name, std::initializer_list<int64_t> values) {
  SetInt64s(example, name, std::span<const int64_t>(values.begin(), values.size()));
}

Result<const tensorflow::Feature*> GetFeature(const tensorflow::Features& features, std::string_view name);
Result<std::vector<std::string_view>> GetBytes(const tensorflow::Features& features, std::string_view name);
Result<std::span<const float>> GetFloats(const tensorflow::Features& features, std::string_view name);
Result<std::span<const int64_t>> GetInt64s(const tensorflow::Features& features, std::string_view name);
Result<std::vector<std::string_view>> GetBytes(const tensorflow::Example& example, std::string_view name);
Result<std::span<const float>> GetFloats(const tensorflow::Example& example, std::string_view name);
Result<std::span<const int64_t>> GetInt64s(const tensorflow::Example& example, std::string_view name);
bool HasFeature(const tensorflow::Example& example, std::string_view name);

// The feature list `name` of a SequenceExample (NotFound names the ones
// there are).
Result<const tensorflow::FeatureList*> GetFeatureList(const tensorflow::SequenceExample& example,
                                                      std::string_view name);

// DataLoss when `payload` is not a valid message of that type.
Result<tensorflow::Example> ParseExample(std::string_view payload);
Result<tensorflow::SequenceExample> ParseSequenceExample(std::string_view payload);
// Deterministic bytes (map entries sorted by name), so the same Example
// always gives the same record.
std::string SerializeExample(const tensorflow::Example& example);
std::string SerializeSequenceExample(const tensorflow::SequenceExample& example);

}  // namespace spool::records
