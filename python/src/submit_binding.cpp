// A run on a launch profile (local mpirun, ssh, Slurm) through the
// launcher library — the app's path to a cluster. The launcher's events
// arrive on its own thread: they are queued here and taken by the Python
// layer (events()), which never runs Python on a foreign thread.
#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/launch/job_launcher.hpp"
#include "driftscan/launch/profile.hpp"

namespace py = pybind11;

namespace driftscan::python {
namespace {

// The profile named `name` in the user's profiles file (launch::
// default_profiles_path), or the built-in local one; a JSON object is a
// profile itself. A local profile without an engine path runs the engine
// this package was built with.
launch::Profile resolve_profile(const std::string& spec, const std::string& engine) {
  launch::Profile p;
  if (!spec.empty() && spec.front() == '{') {
    p = launch::profile_from_json(nlohmann::json::parse(spec), "profile");
  } else {
    const std::string file = launch::default_profiles_path();
    std::vector<launch::Profile> all;
    std::error_code ec;
    if (std::filesystem::exists(file, ec)) all = launch::load_profiles(file);
    bool found = false;
    for (const auto& q : all)
      if (q.name == spec) p = q, found = true;
    if (!found && spec != "local")
      throw bad_input("profile '" + spec + "' is not in " + file + " (the built-in profile is 'local')");
  }
  if (p.kind == launch::ProfileKind::local && p.engine.empty()) p.engine = engine;
  return p;
}

class Submission {
 public:
  Submission(const std::string& profile, const std::string& job_json, const std::string& engine, int ranks,
             int threads) {
    launch::Profile p = resolve_profile(profile, engine);
    if (ranks > 0) p.ranks = ranks;
    if (threads > 0) p.threads = threads;
    Job job = job_from_json(nlohmann::json::parse(job_json), "driftscan.submit");
    validate(job);
    launcher_ = std::make_unique<launch::JobLauncher>(p, job);
    launcher_->on_event([this](const nlohmann::json& e) {
      const std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(e.dump());
    });
    launcher_->start();
  }
  ~Submission() {
    try {
      const py::gil_scoped_release release;  // the launcher's destructor cancels and waits
      launcher_.reset();
    } catch (...) {  // the launcher's own destructor does not throw; releasing the GIL cannot fail here
    }
  }
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;

  std::vector<std::string> events() {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out(events_.begin(), events_.end());
    events_.clear();
    return out;
  }
  void cancel() { launcher_->cancel(); }
  bool finished() const { return launcher_->finished(); }
  // Waits up to `timeout_s` (< 0: for ever); None while still running.
  py::object wait(double timeout_s) {
    {
      const py::gil_scoped_release release;
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
      while (!launcher_->finished() && (timeout_s < 0 || std::chrono::steady_clock::now() < until))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!launcher_->finished()) return py::none();
    const launch::LaunchResult r = launcher_->result();
    py::dict d;
    d["status"] = launch::to_string(r.status);
    d["exit_code"] = r.exit_code;
    d["message"] = r.message;
    d["folder"] = r.result_folder;
    d["files"] = r.files.dump();
    return d;
  }

 private:
  std::mutex mutex_;
  std::deque<std::string> events_;
  std::unique_ptr<launch::JobLauncher> launcher_;
};

}  // namespace

void bind_submit(py::module_& m) {
  py::class_<Submission>(m, "Submission", "A job started on a launch profile.")
      .def(py::init<const std::string&, const std::string&, const std::string&, int, int>(), py::arg("profile"),
           py::arg("job_json"), py::arg("engine"), py::arg("ranks") = 0, py::arg("threads") = 0)
      .def("events", &Submission::events, "The events since the last call (JSON text each).")
      .def("cancel", &Submission::cancel)
      .def("finished", &Submission::finished)
      .def("wait", &Submission::wait, py::arg("timeout_s") = -1.0);
}

}  // namespace driftscan::python
