// ExampleSource: an input of `spool convert` (a CSV table, a JSON Lines file,
// an image folder) read as a sequence of tf.train.Examples, in input order.
//
// A malformed item (a CSV row with the wrong number of fields, a JSON line
// with a nested object) is not an error of the source: Next() reports it as
// kBad with a message naming the file and line, and the caller stops or
// skips it (--skip-bad). Errors are I/O failures or unusable input as a whole.
// Not thread-safe: one thread reads a source.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "spool/core/status.h"
#include "spool/records/example.pb.h"

namespace spool::cli {

enum class SourceItem { kExample, kBad, kEnd };

class ExampleSource {
 public:
  virtual ~ExampleSource() = default;
  // The next item. kExample fills `*example` (when `example` is null the
  // caller does not want this record, and sources that can skip reading it
  // do so); kBad sets `*problem` to "<file>:<line>: <what is wrong>".
  virtual Result<SourceItem> Next(tensorflow::Example* example, std::string* problem) = 0;
  // The feature kinds every Example will have, for the manifest
  // ("int64_list", "float_list", "bytes_list"), in column order.
  virtual std::vector<std::pair<std::string, std::string>> Schema() const = 0;
  // Which records (by 0-based position) the caller will want, so a source
  // that fetches each record from a store can read the wanted ones ahead, in
  // parallel. Call before the first Next(); the default ignores it.
  virtual void ReadAhead(std::function<bool(uint64_t position)> /*wanted*/) {}
};

}  // namespace spool::cli
