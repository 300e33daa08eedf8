// Registers the "s3" scheme with core/storage/registry.h, so that
// OpenLocation("s3://bucket/key") opens an S3Store. Called by
// spool::RegisterAllBackends(); calling it again is harmless.
#pragma once

namespace spool::s3 {
void Register();
}  // namespace spool::s3
