// Registers the "s3" scheme with core/storage/registry.h, so that
// OpenLocation("s3://bucket/key") opens an S3Store. Called by
// spool::RegisterAllBackends(); calling it again is harmless.
//
// How StoreOptions map: endpoint_url, ca_bundle, executor and budget as
// they are; retry for every request of the store and of its credential
// fetches, counted into the store's counters; the settings
//   s3.region, s3.profile     -> S3Options::region, ::profile
//   s3.path_style = true      -> path-style addressing
//   s3.anonymous = true       -> unsigned requests, no credentials
// Any other "s3." setting is InvalidArgument naming it.
#pragma once

#include "spool/core/status.h"
#include "spool/core/storage/registry.h"
#include "spool/s3/config.h"

namespace spool::s3 {

void Register();

// The S3Options the "s3" factory opens a store with; InvalidArgument for an
// unknown "s3." setting or a value that does not parse.
Result<S3Options> S3OptionsFromStoreOptions(const StoreOptions& options);

}  // namespace spool::s3
