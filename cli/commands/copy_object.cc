#include "cli/commands/copy_object.h"

namespace spool::cli {

Result<ObjectInfo> CopyObjectBetween(const ObjectEnd& from, const ObjectEnd& to, const TransferOptions& options) {
  if (from.store == to.store && from.key == to.key) {
    return InvalidArgumentError(from.store->Describe(from.key) + " and " + to.store->Describe(to.key) +
                                " are the same object");
  }
  if (to.local) return DownloadFile(*from.store, from.key, "/" + to.key, options);
  if (from.local) return UploadFile("/" + from.key, *to.store, to.key, options);
  if (from.store == to.store) {
    Result<ObjectInfo> copied = from.store->Copy(from.key, to.key);
    if (copied.ok() || copied.status().code() != StatusCode::kUnimplemented) {
      if (copied.ok() && options.on_progress) options.on_progress(copied->size);
      return copied;
    }
  }
  return CopyObject(*from.store, from.key, *to.store, to.key, options);
}

}  // namespace spool::cli
