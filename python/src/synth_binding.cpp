// synth in the interpreter: a synthetic series with its truth
// (synthetic/synthetic_series.hpp), for examples and tests without data.
#include <filesystem>
#include <string>

#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "engine_call.hpp"

namespace py = pybind11;

namespace driftscan::python {

void bind_synth(py::module_& m) {
  m.def(
      "synth",
      [](const std::string& job_json, const std::string& series, const py::object& callback) {
        Job job = job_from_json(nlohmann::json::parse(job_json), "driftscan.synthesize");
        validate(job);
        SynthOutputs out;
        call_engine(
            [&](Progress& progress, const CancelToken& cancel) {
              progress.start("synth", {{"output", series}});
              out = write_synthetic_series(synth_options(job), series, &progress, &cancel);
            },
            callback);
        py::dict d;
        d["series"] = out.series;
        d["truth"] = out.truth;
        d["reference"] = out.reference;
        d["lines_truth"] = out.lines_truth;
        return d;
      },
      py::arg("job_json"), py::arg("series"), py::arg("callback") = py::none(),
      "Writes a synthetic series (a synth job's settings) to `series` (a .tif path) with its truth files.");
}

}  // namespace driftscan::python
