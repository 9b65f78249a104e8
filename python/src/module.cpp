// driftscan._engine: the engine itself, in the interpreter. The package's
// Python layer (python/driftscan/) is the interface users call.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "exceptions.hpp"

PYBIND11_MODULE(_engine, m) {
  m.doc() = "DriftScan's engine (C++), called by the driftscan package";
  m.attr("__version__") = DRIFTSCAN_VERSION;
  driftscan::python::register_exceptions(m);
  driftscan::python::bind_job(m);
  driftscan::python::bind_series(m);
  driftscan::python::bind_register(m);
  driftscan::python::bind_average(m);
  driftscan::python::bind_apply(m);
  driftscan::python::bind_submit(m);
  driftscan::python::bind_synth(m);
}
