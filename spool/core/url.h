// URLs spool understands: s3://bucket/key, gs://bucket/key, file:///abs/path,
// mem://bucket/key (the in-process store used by tests) and plain local paths.
#pragma once

#include <string>
#include <string_view>

#include "spool/core/status.h"

namespace spool {

struct Url {
  std::string scheme;  // "s3", "gs", "file" or "mem"; plain paths become "file"
  std::string bucket;  // empty for "file"
  std::string key;     // object key (may be empty: the bucket root); for
                       // "file", the absolute path without its leading '/'

  // The canonical form: "s3://bucket/key", "file:///abs/path".
  std::string ToString() const;
  // The same URL with another key (a child, a sibling prefix, ...).
  Url WithKey(std::string new_key) const;
};

// Parses `text`. Relative local paths are made absolute against the current
// directory. Errors are InvalidArgument and quote the input: an empty bucket,
// a bucket name with characters the service forbids, an unknown scheme, a
// key with a NUL byte.
Result<Url> ParseUrl(std::string_view text);

// Joins a prefix and a relative name with exactly one '/' between them.
std::string JoinKey(std::string_view prefix, std::string_view name);

}  // namespace spool
