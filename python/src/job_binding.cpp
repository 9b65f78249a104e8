// The job's fields as the Python layer needs them to take keyword
// arguments by their JSON names, and a job's JSON checked by the engine.
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/job/job_fields.hpp"

namespace py = pybind11;

namespace driftscan::python {

void bind_job(py::module_& m) {
  m.def(
      "job_fields",
      [] {
        py::list out;
        for (const JobField& f : job_fields()) {
          py::dict d;
          d["block"] = f.block;
          d["key"] = f.key;
          d["path"] = f.path();
          d["help"] = f.help;
          d["default"] = f.default_value().dump();
          out.append(d);
        }
        return out;
      },
      "Every job field: block, key, path (block.key), help, default (JSON text).");
  m.def(
      "check_job",
      [](const std::string& text, const std::string& source) {
        const Job job = job_from_json(nlohmann::json::parse(text), source);
        validate(job);
        return to_json(job).dump();
      },
      py::arg("job_json"), py::arg("source"),
      "The job (JSON text) as the engine reads it, complete with defaults; ValueError naming the field when a "
      "setting is wrong.");
}

}  // namespace driftscan::python
