#include "spool/records/compression.h"

#include <string>

#include "spool/core/strings.h"

namespace spool::records {

std::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone: return "NONE";
    case Compression::kZlib: return "ZLIB";
    case Compression::kGzip: return "GZIP";
  }
  return "NONE";
}

Result<Compression> ParseCompression(std::string_view name) {
  const std::string lower = AsciiToLower(name);
  if (lower.empty() || lower == "none") return Compression::kNone;
  if (lower == "zlib") return Compression::kZlib;
  if (lower == "gzip" || lower == "gz") return Compression::kGzip;
  return InvalidArgumentError("unknown record compression '" + std::string(name) +
                              "': use NONE, ZLIB or GZIP");
}

Compression CompressionFromExtension(std::string_view key) {
  if (key.ends_with(".gz")) return Compression::kGzip;
  if (key.ends_with(".zlib")) return Compression::kZlib;
  return Compression::kNone;
}

std::string_view CompressionExtension(Compression compression) {
  switch (compression) {
    case Compression::kNone: return "";
    case Compression::kZlib: return ".zlib";
    case Compression::kGzip: return ".gz";
  }
  return "";
}

}  // namespace spool::records
