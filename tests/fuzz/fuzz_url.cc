// Fuzz target: URL parsing (core/url.h) and S3 endpoint parsing; a parsed
// URL must print and parse back to itself.
#include <cstdint>
#include <string>
#include <string_view>

#include "spool/core/url.h"
#include "spool/s3/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto url = spool::ParseUrl(text); url.ok()) {
    const std::string printed = url->ToString();
    auto again = spool::ParseUrl(printed);
    if (!again.ok() || again->scheme != url->scheme || again->bucket != url->bucket || again->key != url->key) {
      __builtin_trap();
    }
    (void)spool::JoinKey(url->key, "child");
  }
  (void)spool::s3::ParseEndpoint(std::string(text));
  return 0;
}
