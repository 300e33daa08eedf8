// The flat JSON objects that credential sources answer with
// (credential_process, container credentials, EC2 instance metadata):
// {"AccessKeyId": "...", "Version": 1, ...}. Values that are strings,
// numbers, booleans or null are kept as text; nested objects and arrays
// are skipped. Parsed with protobuf's JSON mapping (google.protobuf.Struct).
// Pure, thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "spool/core/status.h"

namespace spool::s3 {

// InvalidArgument when `text` is not a JSON object.
Result<std::map<std::string, std::string>> ParseFlatJson(std::string_view text);

}  // namespace spool::s3
