// average in the interpreter: a series averaged again with a drift table
// (`average --drift` on one process): the table read and the options
// completed by pipeline/drift_averaging.hpp, the frames averaged by the
// engine's averaging (averaging/averaging.hpp).
#include <memory>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "array_series.hpp"
#include "bindings.hpp"
#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/omp_threads.hpp"
#include "driftscan/job/job_series.hpp"
#include "driftscan/pipeline/drift_averaging.hpp"
#include "driftscan/pipeline/recorded_rotation.hpp"
#include "engine_call.hpp"
#include "exceptions.hpp"

namespace py = pybind11;

namespace driftscan::python {
namespace {

py::array_t<float> to_array(const Frame& f) {
  py::array_t<float> out({static_cast<py::ssize_t>(f.height), static_cast<py::ssize_t>(f.width)});
  std::copy(f.pixels.begin(), f.pixels.end(), out.mutable_data());
  return out;
}

}  // namespace

void bind_average(py::module_& m) {
  m.def(
      "average",
      [](const std::string& job_json, const py::object& array, double pixel_size, const std::string& unit,
         const py::object& callback) {
        Job job = job_from_json(nlohmann::json::parse(job_json), "driftscan.average");
        validate(job);
        std::unique_ptr<FrameSource> frames;
        if (array.is_none()) {
          std::string said;  // the file's scan rotations, as the command line takes them
          job = with_recorded_rotations(job, said);
          frames = reading_file([&] { return open_job_series(job); });
        } else
          frames = oriented_series(job, std::make_unique<ArraySeries>(py::array(array), pixel_size, unit, job.input));
        AverageResult avg;
        std::vector<std::string> warnings;
        call_engine(
            [&](Progress& progress, const CancelToken& cancel) {
              const OmpThreadCount threads(job.execution.threads);
              progress.start("average", {{"ranks", 1}, {"threads", job.execution.threads}, {"input", job.input}});
              const DriftAveraging plan = plan_drift_averaging(job, *frames);
              for (const std::string& w : plan.warnings) progress.log(LogLevel::warning, w);
              avg = average_series(*frames, plan.to_frame0, plan.options, &progress, &cancel);
              warnings = plan.warnings;
              warnings.insert(warnings.end(), avg.warnings.begin(), avg.warnings.end());
            },
            callback);
        {
          const py::gil_scoped_release release;
          frames.reset();
        }
        py::dict d;
        d["average"] = to_array(avg.average);
        d["coverage"] = to_array(avg.coverage);
        d["sigma"] = avg.sigma.pixels.empty() ? py::object(py::none()) : py::object(to_array(avg.sigma));
        d["quality"] = avg.quality;
        d["used"] = avg.used;
        d["warnings"] = warnings;
        return d;
      },
      py::arg("job_json"), py::arg("array"), py::arg("pixel_size") = 0.0, py::arg("unit") = "",
      py::arg("callback") = py::none(),
      "Averages job.input (or `array`) with the drift table averaging.drift; returns average, coverage, quality, "
      "used, warnings.");
}

}  // namespace driftscan::python
