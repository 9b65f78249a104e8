#pragma once
// Starting a driftscan-engine job for a profile, without blocking the caller.
// Used by the desktop app and by the driftscan-launch CLI.
//
//   driftscan::launch::JobLauncher launcher(profile, job);
//   launcher.on_event([](const nlohmann::json& e) { ... });   // before start()
//   launcher.start();          // returns at once; work happens on a background thread
//   ...  launcher.cancel();    // any thread, any time; each call is one cancel request
//   LaunchResult r = launcher.wait();   // or poll finished() / result()
//
// Events are the progress protocol of docs/protocol.md, one parsed JSON object
// per engine line ("start", "progress", "log", "result", "error",
// "cancelled"), plus what the launcher itself reports as "log" events with
// "source":"launcher" — among them every external command it runs, as
// {"event":"log","level":"info","source":"launcher","command":[argv...],
//  "message":"$ ssh -p 2222 ..."}.
// The callback runs on the launcher's background thread: a GUI must hand the
// event over to its own thread (e.g. QMetaObject::invokeMethod with
// Qt::QueuedConnection). It must not call wait() or the destructor.
//
// Local: `mpirun -np R --bind-to B driftscan-engine --progress json run job.json`
// with OMP_NUM_THREADS=T. ssh: checks the remote engine (reachable, key
// accepted, binary present, same version — each a clear message within
// connect_timeout_s), stages the job (and the input unless shared_input) into
// remote_workdir/<id>/, runs it there, streams its events, fetches results
// into job.output. slurm: same staging, then a generated batch script
// submitted with sbatch, followed with squeue/scontrol while the job's
// progress file is streamed back; cancel() runs scancel, a further one
// `scancel --signal=KILL --full` (slurm_backend.cpp: what Slurm makes of it).
//
// Every cancel() reaches the engine (local, ssh: one SIGUSR1 each), because
// `register --follow` takes the first request as Stop (end the follow, finish
// the results: it may take minutes, so such a launch sets cancel_grace_s
// long) and a later one as a cancel of that finish (the engine then stops
// with code 4; killed abort_grace_s after that request at the latest).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driftscan/job/job.hpp"
#include "driftscan/launch/profile.hpp"

namespace driftscan::launch {

enum class LaunchStatus { done, failed, cancelled };
const char* to_string(LaunchStatus status);

struct LaunchResult {
  LaunchStatus status = LaunchStatus::failed;
  int exit_code = 3;          // the engine's: 0 done, 2 bad input, 3 failure, 4 cancelled, 5 registration failed
  std::string message;        // one line for the user; empty when done
  std::string result_folder;  // local folder holding the results (job.output)
  nlohmann::json files = nlohmann::json::object();  // from the engine's "result" event, local paths
  std::string remote_id;                            // slurm job id or remote job folder, "" for local runs
};

struct LaunchOptions {
  // Local copy of the job file and logs go here ("" = a fresh folder under $TMPDIR).
  std::string staging_dir;
  // After cancel(): how long the job may take to stop before it is killed.
  double cancel_grace_s = 5.0;
  // After a further cancel() (a follow's finish being cancelled): the same,
  // counted from that request (the shorter of the two deadlines applies).
  double abort_grace_s = 10.0;
  // After mpirun reported a rank's end or death: how long it may take to end
  // the job itself before it is killed (it normally takes well under a second).
  double death_grace_s = 5.0;
  // The version the remote engine must report (default: this build's).
  std::string expected_version = DRIFTSCAN_VERSION;
};

class JobLauncher {
 public:
  using EventCallback = std::function<void(const nlohmann::json& event)>;

  JobLauncher(Profile profile, Job job, LaunchOptions options = {});
  ~JobLauncher();  // cancels a running job and waits for the background thread
  JobLauncher(const JobLauncher&) = delete;
  JobLauncher& operator=(const JobLauncher&) = delete;

  void on_event(EventCallback callback);  // set before start()
  // Validates the job and profile (throws driftscan::Error bad_input) and
  // starts the background thread. Call once.
  void start();
  void cancel();                // thread-safe, non-blocking; one request per call
  bool finished() const;        // the result is available
  LaunchResult wait();          // blocks until finished
  LaunchResult result() const;  // meaningful once finished()

  // The exact argv the launcher runs for the engine (for --dry-run and logs).
  std::vector<std::string> engine_command(const std::string& job_file) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace driftscan::launch
