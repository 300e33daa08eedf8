// The version of this spool build ("0.1.0"), as CMake's project() sets it:
// what `spool --version` prints and what manifests record in created_by.
#pragma once

namespace spool {

const char* VersionString();

}  // namespace spool
