#include "spool/core/version.h"

namespace spool {

const char* VersionString() { return SPOOL_VERSION_STRING; }

}  // namespace spool
