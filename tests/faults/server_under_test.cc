#include "tests/faults/server_under_test.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/env.h"
#include "tests/support/servers.h"

namespace spool::testing {

ServerUnderTest ServerFor(const std::string& backend, const std::string& run, const std::string& gcs_bucket) {
  ServerUnderTest server;
  const std::string folder = run + "-" + std::to_string(::getpid()) + "/";
  if (backend == "s3") {
    server.endpoint = test_support::GetEnv("AWS_ENDPOINT_URL");
    EXPECT_FALSE(server.endpoint.empty()) << "run through ctest: the ceph_rgw fixture sets AWS_ENDPOINT_URL";
    server.base_url = "s3://" + test_support::S3TestBucket("spool-test") + "/" + folder;
    server.options.settings["s3.path_style"] = "true";
  } else {
    server.endpoint = test_support::GcsServerEndpoint();
    server.options.settings["gs.anonymous"] = "true";
    server.base_url = "gs://" + gcs_bucket + "/" + folder;
  }
  return server;
}

std::string HostPort(const std::string& url) {
  const size_t at = url.find("://");
  return at == std::string::npos ? url : url.substr(at + 3);
}

}  // namespace spool::testing
