// Debug logging, off unless SPOOL_LOG=debug (or info). Lines go to stderr.
//
// Nothing that could hold a secret is ever printed: callers log through
// these functions, and RedactHeader/RedactUrl strip Authorization,
// x-amz-security-token, x-goog-* tokens, presigned-URL signatures and
// credentials before a line is formatted.
#pragma once

#include <string>
#include <string_view>

namespace spool::log {

enum class Level { kOff = 0, kInfo = 1, kDebug = 2 };

Level CurrentLevel();  // from SPOOL_LOG, read once
inline bool DebugEnabled() { return CurrentLevel() >= Level::kDebug; }
inline bool InfoEnabled() { return CurrentLevel() >= Level::kInfo; }

void Write(Level level, std::string_view component, std::string_view message);
inline void Debug(std::string_view component, std::string_view message) {
  if (DebugEnabled()) Write(Level::kDebug, component, message);
}

// "<redacted>" for headers that carry secrets, the value otherwise.
std::string RedactHeader(std::string_view name, std::string_view value);
// The URL with secret query parameters (X-Amz-Signature, X-Amz-Credential,
// X-Amz-Security-Token, access_token, ...) replaced by "<redacted>".
std::string RedactUrl(std::string_view url);

}  // namespace spool::log
