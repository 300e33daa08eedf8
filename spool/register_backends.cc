#include "spool/register_backends.h"

#include "spool/backends_config.h"
#if SPOOL_HAVE_S3
#include "spool/s3/register.h"
#endif
#if SPOOL_HAVE_GCS
#include "spool/gcs/register.h"
#endif

namespace spool {

void RegisterAllBackends() {
#if SPOOL_HAVE_S3
  s3::Register();
#endif
#if SPOOL_HAVE_GCS
  gcs::Register();
#endif
}

}  // namespace spool
