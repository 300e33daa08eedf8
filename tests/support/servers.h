// Where the local test servers that CTest fixtures start can be reached.
// The fixtures pass them through the environment:
//   gcs_server  SPOOL_GCS_SERVER_DIR, a folder whose file "port" holds the
//               port the GCS test server listens on at 127.0.0.1;
//   ceph_rgw    SPOOL_S3_TEST_BUCKET and the AWS_* variables.
#pragma once

#include <string>

namespace spool::test_support {

// The folder of the running GCS test server (SPOOL_GCS_SERVER_DIR; empty
// when unset).
std::string GcsServerDir();

// The GCS test server's port, read from its folder; 0 when it is not
// running.
int GcsServerPort();

// "http://127.0.0.1:<port>" of the GCS test server. When it is not running,
// fails the current test with a message that says how to start it.
std::string GcsServerEndpoint();

// The bucket the ceph_rgw fixture made (SPOOL_S3_TEST_BUCKET), or
// `fallback` when the variable is unset or empty.
std::string S3TestBucket(std::string fallback = "");

}  // namespace spool::test_support
