#include "exceptions.hpp"

namespace py = pybind11;

namespace driftscan::python {

void register_exceptions(py::module_& m) {
  static py::exception<Error> registration_failed(m, "RegistrationFailed", PyExc_RuntimeError);
  py::register_exception_translator(
      [](std::exception_ptr p) {  // NOLINT(performance-unnecessary-value-param): the signature pybind11 takes
        try {
          if (p) std::rethrow_exception(p);
        } catch (const InputFileError& e) {
          PyErr_SetString(PyExc_OSError, e.what());
        } catch (const Error& e) {
          switch (e.kind()) {
            case ErrorKind::bad_input: PyErr_SetString(PyExc_ValueError, e.what()); break;
            case ErrorKind::cancelled: PyErr_SetString(PyExc_KeyboardInterrupt, e.what()); break;
            case ErrorKind::registration_failed: registration_failed(e.what()); break;
            case ErrorKind::failure: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
          }
        }
      });
}

}  // namespace driftscan::python
