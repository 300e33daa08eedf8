#include "tests/support/servers.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/env.h"

namespace spool::test_support {

std::string GcsServerDir() { return GetEnv("SPOOL_GCS_SERVER_DIR"); }

int GcsServerPort() {
  std::ifstream in(GcsServerDir() + "/port");
  int port = 0;
  in >> port;
  return port;
}

std::string GcsServerEndpoint() {
  const int port = GcsServerPort();
  EXPECT_NE(port, 0) << "the local GCS server is not running: run this test through ctest (fixture "
                        "gcs_server) or start tests/gcs/server/fixture.py start DIR and set "
                        "SPOOL_GCS_SERVER_DIR=DIR";
  return "http://127.0.0.1:" + std::to_string(port);
}

std::string S3TestBucket(std::string fallback) { return GetEnv("SPOOL_S3_TEST_BUCKET", std::move(fallback)); }

}  // namespace spool::test_support
