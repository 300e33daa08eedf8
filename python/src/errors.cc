// Turns StatusError into the exception class of spool.errors for its code.
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.h"

namespace py = pybind11;

namespace spool::python {

void RegisterErrors(py::module_& m) {
  (void)m;
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const StatusError& e) {
      // Looked up per error, not cached: the errors module may be reloaded,
      // and an error is never on a hot path.
      py::object make = py::module_::import("spool.errors").attr("_from_status");
      py::object error = make(std::string(StatusCodeName(e.status().code())), e.what());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    }
  });
}

}  // namespace spool::python
