// Copying one object between any two locations the fastest way the two ends
// allow: download to a file, upload from a file, server-side copy within a
// store, else a streamed copy. Used by sync (and meant for cp).
#pragma once

#include <string>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"
#include "spool/core/storage/registry.h"
#include "spool/core/storage/transfer.h"

namespace spool::cli {

struct ObjectEnd {
  ObjectStore* store = nullptr;
  std::string key;
  bool local = false;  // a file:// store: key is the path without its leading '/'
};

Result<ObjectInfo> CopyObjectBetween(const ObjectEnd& from, const ObjectEnd& to, const TransferOptions& options = {});

}  // namespace spool::cli
