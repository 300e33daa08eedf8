// The identity of a loader's inputs, carried by LoaderState so that a state
// taken on one dataset is refused by a loader over another (internal).
//
// What identifies a dataset:
// - shards named by a dataset manifest: their names relative to the
//   manifest's folder, record counts, sizes and CRC32C, i.e. the manifest's
//   content. A dataset copied elsewhere with its manifest (a bucket mirrored
//   to local disk) keeps its fingerprint; another dataset, even one with the
//   same shard names and sizes, does not.
// - shards from globs or URLs: their URLs, and their sizes where the listing
//   gave them (a URL is not stat'ed for this: opening stays O(inputs)).
// The shards are taken in the loader's order, before any record counting,
// so the fingerprint does not depend on count_records, index files or the
// job's shape. Thread-safe (a pure function).
#pragma once

#include <string>
#include <vector>

#include "spool/records/loader/inputs.h"

namespace spool::loader {

// 16 lower-case hex digits: the first 64 bits of a SHA-256 over the
// description above.
std::string InputsFingerprint(const std::vector<ShardInfo>& shards);

}  // namespace spool::loader
