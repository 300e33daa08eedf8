#include "spool/s3/flat_json.h"

#include <cmath>
#include <cstdio>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace spool::s3 {
namespace {

// Numbers print as integers when they are whole ("Version": 1 -> "1").
std::string NumberText(double value) {
  char text[32];
  if (std::nearbyint(value) == value && std::fabs(value) < 9007199254740992.0) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%.17g", value);
  }
  return text;
}

}  // namespace

Result<std::map<std::string, std::string>> ParseFlatJson(std::string_view text) {
  google::protobuf::Struct object;
  // protobuf's JSON parser accepts an empty document as an empty message;
  // a credential answer must be an object.
  const bool looks_like_object = text.find('{') != std::string_view::npos;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(text.data(), text.size()), &object);
  if (!looks_like_object || !parsed.ok()) {
    return InvalidArgumentError("the credentials answer is not a JSON object");
  }
  std::map<std::string, std::string> fields;
  for (const auto& [name, value] : object.fields()) {
    switch (value.kind_case()) {
      case google::protobuf::Value::kStringValue: fields[name] = value.string_value(); break;
      case google::protobuf::Value::kNumberValue: fields[name] = NumberText(value.number_value()); break;
      case google::protobuf::Value::kBoolValue: fields[name] = value.bool_value() ? "true" : "false"; break;
      case google::protobuf::Value::kNullValue: fields[name] = "null"; break;
      default: break;  // nested objects and arrays carry nothing a credential source needs
    }
  }
  return fields;
}

}  // namespace spool::s3
