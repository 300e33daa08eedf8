// An outside program using the installed spool package: writes an object
// through the URL registry, reads it back and checks its CRC32C.
#include <cstdio>
#include <string>

#include <spool/register_backends.h>
#include <spool/core/crc32c.h>
#include <spool/core/storage/object_store.h>
#include <spool/core/storage/registry.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer PATH\n");
    return 2;
  }
  spool::RegisterAllBackends();
  auto location = spool::OpenLocation(argv[1]);
  if (!location.ok()) {
    std::fprintf(stderr, "%s\n", location.status().ToString().c_str());
    return 1;
  }
  const std::string payload = "spool installed package works";
  auto written = spool::WriteAll(*location->store, location->key, payload);
  auto read = spool::ReadAll(*location->store, location->key);
  if (!written.ok() || !read.ok() || *read != payload ||
      spool::crc32c::Value(*read) != spool::crc32c::Value(payload)) {
    std::fprintf(stderr, "round trip through %s failed\n", argv[1]);
    return 1;
  }
  std::printf("ok: %s\n", argv[1]);
  return 0;
}
