#pragma once
// The extension module driftscan._engine, one concept per file, each adding
// its part to the module (module.cpp calls them in this order).
#include <pybind11/pybind11.h>

namespace driftscan::python {

void bind_job(pybind11::module_& m);       // job_binding.cpp: the job fields, a job's JSON checked
void bind_series(pybind11::module_& m);    // series_binding.cpp: a file's frames (read)
void bind_register(pybind11::module_& m);  // register_binding.cpp: the serial executor into a results folder
void bind_average(pybind11::module_& m);   // average_binding.cpp: averaging again with a drift table
void bind_apply(pybind11::module_& m);     // apply_binding.cpp: the drift applied to another signal, chunk by chunk
void bind_submit(pybind11::module_& m);    // submit_binding.cpp: a run on a launch profile
void bind_synth(pybind11::module_& m);     // synth_binding.cpp: a synthetic series with its truth

}  // namespace driftscan::python
