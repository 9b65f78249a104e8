#pragma once
// How the engine's errors reach Python: every driftscan::Error carries its
// one-line message; its kind chooses the exception class —
//   bad_input           ValueError (bad settings or data), OSError when it
//                       concerns a file (InputFileError below)
//   failure             RuntimeError
//   cancelled           KeyboardInterrupt
//   registration_failed driftscan.RegistrationFailed (a RuntimeError)
#include <string>

#include <pybind11/pybind11.h>

#include "driftscan/core/error.hpp"

namespace driftscan::python {

// A file that cannot be read as what it should be (missing, corrupt,
// truncated, unsupported): OSError in Python.
class InputFileError : public Error {
 public:
  explicit InputFileError(const std::string& message) : Error(ErrorKind::bad_input, message) {}
};

// Runs `open` (which reads a file); its bad_input becomes an InputFileError.
template <class Open>
auto reading_file(Open&& open) -> decltype(open()) {
  try {
    return open();
  } catch (const InputFileError&) {
    throw;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::bad_input) throw InputFileError(e.what());
    throw;
  }
}

// Registers the translation above and the module's exception classes.
void register_exceptions(pybind11::module_& m);

}  // namespace driftscan::python
