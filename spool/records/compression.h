// The compressions of a TFRecord file, as TensorFlow defines them:
// NONE, ZLIB (one RFC 1950 stream) and GZIP (RFC 1952; concatenated members
// read as one stream). Chosen explicitly or from the file name's extension,
// never guessed from the content.
#pragma once

#include <string_view>

#include "spool/core/status.h"

namespace spool::records {

enum class Compression { kNone, kZlib, kGzip };

// "NONE", "ZLIB", "GZIP": TensorFlow's compression_type spelling.
std::string_view CompressionName(Compression compression);

// Accepts TensorFlow's names in any case ("", "none", "ZLIB", "gzip", "gz").
Result<Compression> ParseCompression(std::string_view name);

// GZIP for "*.gz", ZLIB for "*.zlib", NONE otherwise.
Compression CompressionFromExtension(std::string_view key);

// The extension the sharded writer appends: "", ".zlib" or ".gz".
std::string_view CompressionExtension(Compression compression);

}  // namespace spool::records
