// Shared by the binding files of spool._spool: how a spool Status becomes a
// Python exception, and the Register* functions module.cc calls.
//
// Errors: binding code calls ThrowIfError / Unwrap; the StatusError they
// throw is turned by the translator (errors.cc) into the spool.errors class
// for its code (spool.NotFoundError is also a FileNotFoundError, ...), with
// Status::ToString()'s one-line message. Both may be called with the GIL
// released: the translation happens after the GIL is taken back.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <string>
#include <utility>

#include "spool/core/status.h"

namespace spool::python {

class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)), what_(status_.ToString()) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  Status status_;
  std::string what_;
};

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}

template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) throw StatusError(result.status());
  return std::move(*result);
}

// One per binding file; each adds its classes and functions to `m`.
void RegisterErrors(pybind11::module_& m);
void RegisterObjects(pybind11::module_& m);
void RegisterRecords(pybind11::module_& m);
void RegisterExamples(pybind11::module_& m);
void RegisterLoader(pybind11::module_& m);
void RegisterCheckpoints(pybind11::module_& m);
void RegisterMetrics(pybind11::module_& m);
void RegisterRecordMap(pybind11::module_& m);

}  // namespace spool::python
