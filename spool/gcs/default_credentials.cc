#include "spool/gcs/default_credentials.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace spool::gcs {
namespace {

bool DmiSaysGoogle() {
  std::ifstream in("/sys/class/dmi/id/product_name");
  std::string product;
  std::getline(in, product);
  return product.find("Google") != std::string::npos;
}

bool ProbeMetadataServer(HttpTransport& transport, const std::string& host) {
  HttpRequest request;
  request.url = "http://" + host + "/computeMetadata/v1/project/project-id";
  request.headers.Set("Metadata-Flavor", "Google");
  request.total_timeout = std::chrono::milliseconds(1'000);
  auto response = transport.Send(request, nullptr);
  return response.ok() && response->ok() && response->headers.Get("Metadata-Flavor") == "Google";
}

}  // namespace

Result<std::shared_ptr<Credentials>> FindDefaultCredentials(std::shared_ptr<HttpTransport> transport,
                                                            const DefaultCredentialsEnvironment& env) {
  const Env& variables = env.variables;
  if (auto path = variables.Get("GOOGLE_APPLICATION_CREDENTIALS")) {
    return LoadCredentialsFile(*path, "GOOGLE_APPLICATION_CREDENTIALS=" + *path, transport);
  }
  std::filesystem::path gcloud_dir;
  if (auto config = variables.Get("CLOUDSDK_CONFIG")) {
    gcloud_dir = *config;
  } else if (auto home = variables.Get("HOME")) {
    gcloud_dir = std::filesystem::path(*home) / ".config" / "gcloud";
  }
  if (!gcloud_dir.empty()) {
    const auto adc = gcloud_dir / "application_default_credentials.json";
    std::error_code ignored;
    if (std::filesystem::exists(adc, ignored)) {
      return LoadCredentialsFile(adc.string(), "gcloud application-default credentials " + adc.string(), transport);
    }
  }
  MetadataServerOptions metadata;
  if (auto host = variables.Get("GCE_METADATA_HOST")) {
    metadata.host = *host;
    return MakeMetadataServerCredentials(metadata, transport);
  }
  const bool on_gce = env.on_gce ? env.on_gce() : DmiSaysGoogle();
  const std::string host = "169.254.169.254";
  const bool answers = on_gce || (env.metadata_server_answers ? env.metadata_server_answers(host)
                                                              : ProbeMetadataServer(*transport, host));
  if (answers) return MakeMetadataServerCredentials(metadata, transport);
  return UnauthenticatedError(
      "no Google credentials found: set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, run "
      "`gcloud auth application-default login`, run on GCE/GKE (metadata server), use anonymous access "
      "(--no-sign-request) for public data, or set STORAGE_EMULATOR_HOST for an emulator");
}

}  // namespace spool::gcs
