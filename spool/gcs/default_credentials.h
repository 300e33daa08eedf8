// Application Default Credentials: how spool finds Google credentials when
// the caller names none, in the order Google's client libraries use.
//
//   1. GOOGLE_APPLICATION_CREDENTIALS: a service_account key file or an
//      authorized_user file;
//   2. gcloud's ADC file: $CLOUDSDK_CONFIG/application_default_credentials.json,
//      else ~/.config/gcloud/application_default_credentials.json (written by
//      `gcloud auth application-default login`);
//   3. the metadata server, when GCE_METADATA_HOST is set, when the machine
//      says it is a Google Compute Engine VM (GCE, GKE nodes and pods), or
//      when a short probe of 169.254.169.254 answers as one.
//
// Nothing found is Unauthenticated, with a message that lists what to set.
// The emulator convention (STORAGE_EMULATOR_HOST: no credentials at all) is
// applied by GcsStore, not here.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "spool/core/env.h"
#include "spool/core/http/transport.h"
#include "spool/core/status.h"
#include "spool/gcs/credentials.h"

namespace spool::gcs {

struct DefaultCredentialsEnvironment {
  // The variables the chain reads (GOOGLE_APPLICATION_CREDENTIALS,
  // CLOUDSDK_CONFIG, HOME, GCE_METADATA_HOST); default: CurrentEnv() as of
  // when this struct is made.
  Env variables = CurrentEnv();
  // True where the machine is a GCE VM (or a GKE node's pod); default: reads
  // /sys/class/dmi/id/product_name.
  std::function<bool()> on_gce;
  // Whether a metadata server answers at `host`, with a short timeout;
  // default: one GET with Metadata-Flavor: Google.
  std::function<bool(const std::string& host)> metadata_server_answers;
};

Result<std::shared_ptr<Credentials>> FindDefaultCredentials(std::shared_ptr<HttpTransport> transport,
                                                            const DefaultCredentialsEnvironment& env = {});

}  // namespace spool::gcs
