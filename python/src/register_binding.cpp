// register in the interpreter: the job's plan, then the serial executor
// (pipeline/serial_register.hpp) over the file's frames or a numpy array,
// its outputs committed to job.output as one set — the same files, from the
// same code, as `driftscan-engine register` on one rank. The plan decides as
// it does for the command line; a plan this executor does not carry out
// (the scan-distortion phase is the distributed executor's) is the Python
// layer's to send through the launcher (plan() tells it).
#include <memory>
#include <optional>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "array_series.hpp"
#include "bindings.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/omp_threads.hpp"
#include "driftscan/job/job_series.hpp"
#include "driftscan/job/output_set.hpp"
#include "driftscan/pipeline/rank_checkpoints.hpp"
#include "driftscan/pipeline/recorded_rotation.hpp"
#include "driftscan/pipeline/register_plan.hpp"
#include "driftscan/pipeline/scan_distortion_decision.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/registration/registration_operator.hpp"
#include "engine_call.hpp"
#include "exceptions.hpp"

namespace py = pybind11;

namespace driftscan::python {
namespace {

Job checked_job(const std::string& text) {
  Job job = job_from_json(nlohmann::json::parse(text), "driftscan.register");
  validate(job);
  return job;
}

// The job as the command line would run it: the file's scan rotations and
// scan.auto_distortion decided from it (`said`: why, or "").
Job decided_job(const std::string& text, bool from_file, std::string& said) {
  Job job = checked_job(text);
  if (!from_file) return job;
  std::string rotations_said;
  const Job turned = with_recorded_rotations(job, rotations_said);
  Job decided = with_scan_distortion_decided(turned, said);
  if (!rotations_said.empty()) said = rotations_said + (said.empty() ? "" : "; " + said);
  return decided;
}

void check_frames(const Job& job, const FrameSource& frames) {
  const std::size_t n = frames.frame_count();
  if (n < 2) throw bad_input(job.input + ": " + std::to_string(n) + " frame(s): registration needs at least 2 frames");
  for (std::size_t k : job.averaging.exclude_frames)
    if (k >= n)
      throw bad_input("averaging.exclude_frames: frame " + std::to_string(k) + " is not in " + job.input + " (" +
                      std::to_string(n) + " frames, 0 to " + std::to_string(n - 1) + ")");
}

// The register run itself (on the engine's thread).
nlohmann::json run(const Job& job, const FrameSource& frames, const std::string& said, Progress& progress,
                   const CancelToken& cancel) {
  const RegisterPlan plan = plan_register(job, 1);
  if (plan.executor != RegisterExecutor::serial)
    throw bad_input(std::string("this run needs the ") + to_string(plan.executor) + " executor (" + plan.reason +
                    "): run it with driftscan.submit");
  const OmpThreadCount threads(plan.threads);
  progress.start("register", {{"ranks", 1}, {"threads", plan.threads}, {"input", job.input}, {"output", job.output}});
  if (!said.empty()) progress.log(LogLevel::info, said);
  check_frames(job, frames);
  if (std::string why = unusable_frame_reason(frames.frame(0)); !why.empty())
    throw bad_input(job.input + ": frame 0 (the reference of the registration) " + why);
  OutputSet set(job.output, "register", {job.input});
  if (!set.lock_warning().empty()) progress.log(LogLevel::warning, set.lock_warning());
  RegisterResult r;
  try {
    r = register_serial(job, plan, frames, progress, cancel, set);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::registration_failed) {
      set.commit();  // drift.csv and report.json: the answer
      remove_checkpoints(job.output);
      throw;
    }
    throw set.explain(e);
  }
  for (const std::string& w : r.warnings) progress.log(LogLevel::warning, w);
  set.commit();
  remove_checkpoints(job.output);
  nlohmann::json files = {{"drift", r.files.drift},
                          {"average", r.files.average},
                          {"coverage", r.files.coverage},
                          {"report", r.files.report}};
  progress.result(files);
  return files;
}

}  // namespace

void bind_register(py::module_& m) {
  m.def(
      "plan",
      [](const std::string& job_json, bool from_file) {
        std::string said;
        const Job job = decided_job(job_json, from_file, said);
        const RegisterPlan plan = plan_register(job, 1);
        py::dict d;
        d["executor"] = to_string(plan.executor);
        d["reason"] = plan.reason;
        d["said"] = said;
        d["job"] = to_json(job).dump();
        return d;
      },
      py::arg("job_json"), py::arg("from_file"),
      "The register plan of a job on one process: executor, reason, what was decided from the file (said), the job "
      "as decided (JSON).");
  m.def(
      "register",
      [](const std::string& job_json, const py::object& array, double pixel_size, const std::string& unit,
         const py::object& callback) {
        std::string said;
        const bool from_file = array.is_none();
        const Job job = decided_job(job_json, from_file, said);
        std::unique_ptr<FrameSource> frames;
        if (from_file) frames = reading_file([&] { return open_job_series(job); });
        else
          frames = oriented_series(job, std::make_unique<ArraySeries>(py::array(array), pixel_size, unit, job.input));
        nlohmann::json files;
        call_engine(
            [&](Progress& progress, const CancelToken& cancel) { files = run(job, *frames, said, progress, cancel); },
            callback);
        {
          const py::gil_scoped_release release;  // the frames' destructor takes it back if it needs it
          frames.reset();
        }
        return files.dump();
      },
      py::arg("job_json"), py::arg("array"), py::arg("pixel_size") = 0.0, py::arg("unit") = "",
      py::arg("callback") = py::none(),
      "Runs a register job in this process (serial executor) over job.input, or over `array` (frames, height, "
      "width) when given; returns the files written (JSON text).");
}

}  // namespace driftscan::python
