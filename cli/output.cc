#include "cli/output.h"

#include <cstdio>
#include <ctime>

#include "spool/core/bytes.h"
#include "spool/core/crc32c.h"
#include "spool/core/storage/verify.h"

namespace spool::cli {

void PrintError(const Status& status) {
  // ToString adds what a remote service said; the code name is left out.
  std::string text = status.ToString();
  std::string_view code = StatusCodeName(status.code());
  if (text.starts_with(code) && text.size() > code.size() + 2) text.erase(0, code.size() + 2);
  PrintError(text);
}

void PrintError(std::string_view message) {
  std::fflush(stdout);
  std::fprintf(stderr, "spool: %.*s\n", static_cast<int>(message.size()), message.data());
}

void PrintWarning(std::string_view message) {
  std::fflush(stdout);
  std::fprintf(stderr, "spool: warning: %.*s\n", static_cast<int>(message.size()), message.data());
}

void PrintLine(std::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string FormatTimestamp(std::chrono::system_clock::time_point time) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string FormatSize(uint64_t bytes, bool human) { return human ? FormatBytes(bytes) : std::to_string(bytes); }

std::string ObjectJson(std::string_view url, const ObjectInfo& info, bool verified_by) {
  std::string out = "{\"url\":" + JsonString(url) + ",\"key\":" + JsonString(info.key) +
                    ",\"size\":" + std::to_string(info.size) + ",\"updated\":" + JsonString(FormatTimestamp(info.updated)) +
                    ",\"version\":" + JsonString(info.version);
  if (info.crc32c) {
    out += ",\"crc32c\":" + JsonString(crc32c::ToBase64(*info.crc32c));
    out += std::string(",\"crc32c_from\":") + (info.crc32c_from_uploader ? "\"uploader\"" : "\"store\"");
  }
  if (info.digest) {
    const StoredDigest& digest = *info.digest;
    out += ",\"digest\":{\"algorithm\":" + JsonString(DigestName(digest.algorithm)) +
           ",\"value\":" + JsonString(digest.base64) + ",\"from\":" + JsonString(digest.source) + "}";
    if (digest.algorithm == DigestAlgorithm::kMd5) out += ",\"md5\":" + JsonString(digest.base64);
  }
  if (verified_by) {
    // What a whole read is checked against: from "uploader" or "store" for
    // the CRC32C, else the digest's "from"; null when nothing.
    const std::optional<StoredDigest> checksum = ReadChecksum(info);
    out += ",\"verified_by\":";
    out += checksum ? "{\"algorithm\":" + JsonString(DigestName(checksum->algorithm)) +
                          ",\"from\":" + JsonString(checksum->source) + "}"
                    : "null";
  }
  out += "}";
  return out;
}

}  // namespace spool::cli
