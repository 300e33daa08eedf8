// JSON views of records for people and the CLI, in protobuf's canonical JSON
// mapping (bytes as base64, int64 as strings, proto field names).
#pragma once

#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "spool/core/status.h"

namespace spool::records {

enum class PayloadType { kExample, kSequenceExample };

// One line, or indented when `pretty`.
Result<std::string> MessageToJson(const google::protobuf::Message& message, bool pretty = false);
// Parses `json` into `*message`; InvalidArgument names `what` and the
// parser's complaint. Unknown fields are ignored (newer writers).
Status JsonToMessage(std::string_view json, google::protobuf::Message* message, std::string_view what);

// Parses a record payload as `type` and renders it (DataLoss if it is not one).
Result<std::string> RecordToJson(std::string_view payload, PayloadType type, bool pretty = false);

}  // namespace spool::records
