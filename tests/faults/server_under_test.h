// The real server a fault test runs against: Ceph RGW (the ceph_rgw
// fixture) or the project's GCS server (the gcs_server fixture), a fresh
// base URL for this run, and the StoreOptions that reach it.
#pragma once

#include <string>

#include "spool/core/storage/registry.h"

namespace spool::testing {

struct ServerUnderTest {
  std::string endpoint;  // the server itself: "http://127.0.0.1:port"
  std::string base_url;  // "s3://<test bucket>/<run>" or "gs://<gcs_bucket>/<run>", ending in '/'
  StoreOptions options;  // path-style S3 or anonymous GCS; endpoint_url left for the caller
};

// `backend` is "s3" or "gs"; `run` names this run's folder (made unique with
// the pid). Fails the current test when the fixture's server is not there.
ServerUnderTest ServerFor(const std::string& backend, const std::string& run, const std::string& gcs_bucket);

// "http://127.0.0.1:47480" -> "127.0.0.1:47480", what FaultProxy::Start takes.
std::string HostPort(const std::string& url);

}  // namespace spool::testing
