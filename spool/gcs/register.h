// Registers the "gs" scheme with the URL registry (core/storage/registry.h),
// so OpenLocation("gs://bucket/key") returns a GcsStore. Called by
// spool::RegisterAllBackends(); calling it again is harmless.
//
// How StoreOptions map: endpoint_url -> the service endpoint (credentials
// still from the ADC chain); ca_bundle -> TLS trust; executor, budget as
// they are; retry -> every request of the store and of its credentials,
// counted into the store's counters; the setting gs.anonymous = true -> no
// credentials. Any other "gs." setting is InvalidArgument naming it. With
// neither endpoint_url nor gs.anonymous set, STORAGE_EMULATOR_HOST (when
// set) points every store at that emulator without credentials.
#pragma once

#include "spool/core/status.h"
#include "spool/core/storage/registry.h"
#include "spool/core/url.h"
#include "spool/gcs/gcs_store.h"

namespace spool::gcs {

void Register();

// The GcsStoreOptions the "gs" factory opens `url`'s bucket with;
// InvalidArgument for an unknown "gs." setting or a value that does not parse.
Result<GcsStoreOptions> GcsOptionsFromStoreOptions(const Url& url, const StoreOptions& options);

}  // namespace spool::gcs
