// Registers every storage backend this build of spool contains (s3://, gs://)
// with the URL registry of core/storage/registry.h. Call once at start-up,
// before the first OpenLocation of a remote URL; calling it again is harmless.
#pragma once

namespace spool {
void RegisterAllBackends();
}  // namespace spool
