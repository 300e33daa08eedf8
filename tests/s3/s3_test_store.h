// Opening the fixture's bucket (tests/s3/CMakeLists.txt: SPOOL_S3_TEST_ENV)
// for S3 integration tests, each under a prefix of its own.
#pragma once

#include <memory>
#include <string>

#include "spool/s3/s3_store.h"

namespace spool::s3::testing {

// The bucket named by SPOOL_S3_TEST_BUCKET, configured from the AWS_*
// environment the fixture sets. Aborts the test binary when it cannot open.
std::shared_ptr<S3Store> OpenTestStore(const S3Options& options = {});
std::string TestBucket();
// "<name>-<pid>-<counter>/": a fresh prefix per call.
std::string UniquePrefix(const std::string& name);

}  // namespace spool::s3::testing
