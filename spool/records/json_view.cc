#include "spool/records/json_view.h"

#include <google/protobuf/util/json_util.h>

#include "spool/records/example.h"

namespace spool::records {

Result<std::string> MessageToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = true;
  std::string json;
  auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return InternalError("cannot render " + message.GetTypeName() + " as JSON: " + std::string(status.message()));
  }
  return json;
}

Status JsonToMessage(std::string_view json, google::protobuf::Message* message, std::string_view what) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(std::string(json), message, options);
  if (!status.ok()) {
    return InvalidArgumentError(std::string(what) + " is not valid JSON for " + message->GetTypeName() + ": " +
                                std::string(status.message()));
  }
  return OkStatus();
}

Result<std::string> RecordToJson(std::string_view payload, PayloadType type, bool pretty) {
  if (type == PayloadType::kSequenceExample) {
    SPOOL_ASSIGN_OR_RETURN(auto example, ParseSequenceExample(payload));
    return MessageToJson(example, pretty);
  }
  SPOOL_ASSIGN_OR_RETURN(auto example, ParseExample(payload));
  return MessageToJson(example, pretty);
}

}  // namespace spool::records
