// Opening the fixture's bucket (tests/s3/CMakeLists.txt: SPOOL_S3_TEST_ENV
// for Ceph RGW, SPOOL_MOTO_TEST_ENV for moto) for S3 integration tests, each
// under a prefix of its own.
#pragma once

#include <memory>
#include <string>

#include "spool/s3/s3_store.h"

namespace spool::s3::testing {

// The bucket named by SPOOL_S3_TEST_BUCKET, configured from the AWS_*
// environment the fixture sets. Aborts the test binary when it cannot open.
std::shared_ptr<S3Store> OpenTestStore(const S3Options& options = {});
std::string TestBucket();
// Which server the fixture started (SPOOL_S3_TEST_SERVER): "ceph_rgw", the
// default, or "moto". For the few cases where a server's documented quirk
// decides what is correct (docs/s3.md, docs/integrity.md).
std::string TestServer();
// "<name>-<pid>-<counter>/": a fresh prefix per call.
std::string UniquePrefix(const std::string& name);

}  // namespace spool::s3::testing
