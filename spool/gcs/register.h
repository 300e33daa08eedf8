// Registers the "gs" scheme with the URL registry (core/storage/registry.h),
// so OpenLocation("gs://bucket/key") returns a GcsStore. Called by
// spool::RegisterAllBackends(); calling it again is harmless.
//
// How StoreOptions map: endpoint_url -> the service endpoint (credentials
// still from the ADC chain); anonymous -> no credentials; ca_bundle -> TLS
// trust. With neither endpoint_url nor anonymous set, STORAGE_EMULATOR_HOST
// (when set) points every store at that emulator without credentials.
#pragma once

namespace spool::gcs {
void Register();
}  // namespace spool::gcs
