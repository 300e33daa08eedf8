#include "spool/core/log.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "spool/core/env.h"
#include "spool/core/strings.h"

namespace spool::log {
namespace {

constexpr std::string_view kRedacted = "<redacted>";

template <size_t N>
bool IsOneOf(std::string_view name, const std::array<std::string_view, N>& names) {
  for (std::string_view candidate : names) {
    if (EqualsIgnoreCase(name, candidate)) return true;
  }
  return false;
}

// Headers whose values are credentials, tokens or encryption keys.
constexpr std::array<std::string_view, 10> kSecretHeaders = {
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-amz-security-token",
    "x-amz-server-side-encryption-customer-key",
    "x-amz-copy-source-server-side-encryption-customer-key",
    "x-goog-iam-authorization-token",
    "x-goog-encryption-key",
    "x-goog-copy-source-encryption-key",
};

// Query parameters of presigned / signed URLs and OAuth flows.
constexpr std::array<std::string_view, 14> kSecretQueryParameters = {
    "x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature",
    "x-goog-credential", "awsaccesskeyid", "signature", "sig",
    "access_token", "refresh_token", "id_token", "client_secret",
    "token", "key",
};

Level ReadLevel() {
  const std::optional<std::string> value = CurrentEnv().Get("SPOOL_LOG");
  if (!value) return Level::kOff;
  std::string_view v(*value);
  if (EqualsIgnoreCase(v, "debug") || EqualsIgnoreCase(v, "trace")) return Level::kDebug;
  if (EqualsIgnoreCase(v, "info")) return Level::kInfo;
  return Level::kOff;
}

}  // namespace

Level CurrentLevel() {
  static const Level level = ReadLevel();
  return level;
}

void Write(Level level, std::string_view component, std::string_view message) {
  if (level == Level::kOff || CurrentLevel() < level) return;
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  std::string line = "spool ";
  line += stamp;
  line += level == Level::kDebug ? " debug " : " info ";
  line += component;
  line += ": ";
  line += message;
  line += '\n';
  // One fwrite per line: stdio locks the stream, so lines from many threads
  // never interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

std::string RedactHeader(std::string_view name, std::string_view value) {
  return IsOneOf(name, kSecretHeaders) ? std::string(kRedacted) : std::string(value);
}

std::string RedactUrl(std::string_view url) {
  std::string out;
  out.reserve(url.size());
  // user:password@ in the authority.
  size_t scheme_end = url.find("://");
  if (scheme_end != std::string_view::npos) {
    size_t authority_start = scheme_end + 3;
    size_t authority_end = std::min(url.find_first_of("/?#", authority_start), url.size());
    size_t at = url.substr(0, authority_end).rfind('@');
    if (at != std::string_view::npos && at >= authority_start) {
      size_t colon = url.substr(0, at).find(':', authority_start);
      if (colon != std::string_view::npos) {
        out.append(url.substr(0, colon + 1));
        out.append(kRedacted);
        url.remove_prefix(at);
      }
    }
  }
  size_t query = url.find('?');
  if (query == std::string_view::npos) return out.append(url);
  size_t fragment = std::min(url.find('#', query), url.size());
  out.append(url.substr(0, query + 1));
  std::string_view params = url.substr(query + 1, fragment - query - 1);
  bool first = true;
  while (true) {
    size_t amp = params.find('&');
    std::string_view param = params.substr(0, amp);
    if (!first) out += '&';
    first = false;
    size_t eq = param.find('=');
    if (eq != std::string_view::npos && IsOneOf(param.substr(0, eq), kSecretQueryParameters)) {
      out.append(param.substr(0, eq + 1));
      out.append(kRedacted);
    } else {
      out.append(param);
    }
    if (amp == std::string_view::npos) break;
    params.remove_prefix(amp + 1);
  }
  return out.append(url.substr(fragment));
}

}  // namespace spool::log
