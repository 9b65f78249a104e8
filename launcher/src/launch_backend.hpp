#pragma once
// Private to the launcher: one backend per profile kind (local_backend.cpp,
// ssh_backend.cpp, slurm_backend.cpp) behind LaunchBackend, and what they all
// share in LaunchContext — the launch's state, its events, command logging
// and following the engine's event stream. job_launcher.cpp picks the
// backend from the profile and runs it on the launcher's background thread.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/job/job.hpp"
#include "driftscan/launch/job_launcher.hpp"
#include "driftscan/launch/profile.hpp"
#include "subprocess.hpp"

namespace driftscan::launch {

// One launch: set up by JobLauncher, used by its backend on the background
// thread (cancel_requested and cancel_requests are the only fields another
// thread touches).
struct LaunchContext {
  Profile profile;
  Job job;
  LaunchOptions options;
  JobLauncher::EventCallback callback;
  std::atomic<bool> cancel_requested{false};
  std::atomic<unsigned> cancel_requests{0};  // how many cancel() calls: each is passed on

  // Set while following the job (background thread only).
  std::string staging;        // local folder: job file, batch script, fetched copy
  std::string remote_output;  // ssh/slurm: remote results folder, mapped to job.output in result events
  std::string remote_id;      // ssh: remote job folder; slurm: its job id once submitted
  std::string stderr_tail;
  nlohmann::json result_files = nlohmann::json::object();
  bool saw_cancelled_event = false;
  std::string engine_error;
  // mpirun reported a rank's end but did not end itself and was killed
  // (seen when a rank fails inside MPI_Init under PMIx): the one-line why.
  std::string stuck_after_death;

  // ---- events; a faulty consumer must not take the launcher down
  void emit(const nlohmann::json& e);
  void log(const std::string& message, const std::string& level = "info");
  void log_command(const std::vector<std::string>& argv);

  // Every external command goes through run_logged() or follow(), so each
  // one is logged exactly as run.
  CommandOutput run_logged(const std::vector<std::string>& argv, double timeout_s, const std::string& stdin_text = "");
  // Runs the engine (or a follower) to its end, honouring cancel(): on_cancel
  // runs once per request (default: SIGUSR1 to mpirun), and the process
  // group is killed options.cancel_grace_s after the first request, or
  // options.abort_grace_s after a later one if that comes sooner. Once mpirun
  // has reported that a rank ended or died, it has options.death_grace_s to
  // end too; then on_kill runs (a remote mpirun's own kill) and the process
  // group is killed, so a job never hangs on a dead rank.
  int follow(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::function<void()>& on_cancel, const std::function<void()>& on_kill = {});

  // The engine's output: stdout lines are progress events (anything else
  // passes through as a log line), stderr lines warnings.
  void on_engine_line(const std::string& line);
  void on_stderr_line(const std::string& line);

  // The result of an engine run that ended with `code`, the events seen and
  // mpirun's stderr (a rank's death is named as such).
  LaunchResult finish(int code);

 private:
  nlohmann::json local_files(const nlohmann::json& files) const;
};

class LaunchBackend {
 public:
  virtual ~LaunchBackend() = default;
  // The exact argv that starts the engine on `job_file` (for --dry-run and logs).
  virtual std::vector<std::string> engine_command(const std::string& job_file) const = 0;
  // Stages, runs, follows and fetches the job (the context's staging folder exists).
  // Throws driftscan::Error when the launch itself fails.
  virtual LaunchResult run() = 0;
};

std::unique_ptr<LaunchBackend> make_local_backend(LaunchContext& context);
std::unique_ptr<LaunchBackend> make_ssh_backend(LaunchContext& context);
std::unique_ptr<LaunchBackend> make_slurm_backend(LaunchContext& context);

}  // namespace driftscan::launch
