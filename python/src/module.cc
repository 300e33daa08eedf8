// spool._spool: the C++ side of the Python package. The public API is the
// spool package (python/spool/__init__.py), which re-exports from here.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "spool/core/version.h"
#include "spool/register_backends.h"

PYBIND11_MODULE(_spool, m) {
  m.doc() = "spool's C++ core; use the spool package, not this module";
  m.attr("__version__") = std::string(spool::VersionString());
  spool::RegisterAllBackends();
  spool::python::RegisterErrors(m);
  spool::python::RegisterObjects(m);
  spool::python::RegisterRecords(m);
  spool::python::RegisterExamples(m);
  spool::python::RegisterLoader(m);
  spool::python::RegisterCheckpoints(m);
  spool::python::RegisterMetrics(m);
  spool::python::RegisterRecordMap(m);
}
