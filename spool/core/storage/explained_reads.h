// Reads of an object opened from what a listing, a dataset manifest or an
// index said (ObjectStore::OpenListed): such an object makes no request at
// its open, so that it changed or is gone shows only when it is read. These
// two helpers let the caller say so in its own terms (naming its manifest
// or dataset), in one place for every caller.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <utility>

#include "spool/core/status.h"
#include "spool/core/storage/object_store.h"

namespace spool {

// Whether a read error is the store's pin failing: the object is not the
// one it was opened as (its size, ETag or generation). These are a
// FailedPrecondition the client raised itself (no HTTP status) or a 412 or
// 416 from the server. Other FailedPreconditions (a skewed clock, a wrong
// region) are not.
bool IsChangedSinceOpened(const Status& read);

// A ReadableObject whose failed reads go through `explain`, which returns
// the error to report (the status it was given, or one in its caller's
// terms); everything else passes through to the wrapped object.
// Thread-safety: as the wrapped object's; `explain` is called from the
// reading threads and must be safe to call from several at once.
class ExplainedReads : public ReadableObject {
 public:
  using Explain = std::function<Status(const Status& read)>;

  ExplainedReads(std::unique_ptr<ReadableObject> object, Explain explain)
      : object_(std::move(object)), explain_(std::move(explain)) {}

  const ObjectInfo& info() const override { return object_->info(); }
  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override;
  bool verifies_whole_reads() const override { return object_->verifies_whole_reads(); }
  RangedReads ranged_reads() const override { return object_->ranged_reads(); }
  bool reads_are_local() const override { return object_->reads_are_local(); }

 private:
  const std::unique_ptr<ReadableObject> object_;
  const Explain explain_;
};

}  // namespace spool
