#pragma once
// Private to the launcher: the remote side of the ssh and slurm profiles,
// reached with the system ssh/scp (so ~/.ssh/config, agents and ProxyJump
// apply) — checking the remote engine, staging a job into
// remote_workdir/<id>/, fetching its results. Every command is logged
// through the LaunchContext; an ssh-level failure becomes one clear message.
#include <string>
#include <vector>

#include "launch_backend.hpp"

namespace driftscan::launch {

class RemoteHost {
 public:
  explicit RemoteHost(LaunchContext& context) : ctx_(context) {}

  // [user@]host
  std::string target() const;
  std::vector<std::string> ssh(const std::string& remote_command) const;
  std::vector<std::string> scp(std::vector<std::string> paths) const;
  // The setup_lines, one per line, to run before anything else remotely.
  std::string prelude() const;
  // Bound on a short command: the connection timeout and some slack.
  double connect_bound() const { return ctx_.profile.connect_timeout_s + 5.0; }
  // `mpirun -np np [--bind-to B] -x OMP_NUM_THREADS <mpirun_args> driftscan-engine --progress json run job_file`
  // as run remotely (the run-as-root and oversubscribe flags are the remote shell's to add).
  std::vector<std::string> engine_command(int np, const std::string& job_file) const;

  // Runs a short remote command; an ssh-level failure (exit 255) throws.
  CommandOutput run(const std::string& command, double timeout_s);
  // ssh's own failure (exit 255), as one line.
  std::string failure_message(const CommandOutput& r) const;

  // Checks the remote engine (present, same version), creates the job's
  // remote folder and copies the job file (and the input unless
  // shared_input) there. Sets dir() and the context's remote_output/remote_id.
  void stage();
  const std::string& dir() const { return dir_; }
  // Copies the remote results folder into job.output (unless fetch_results is off).
  void fetch_results();

 private:
  std::vector<std::string> common_options(bool scp) const;
  std::string engine() const;
  void check_engine();

  LaunchContext& ctx_;
  std::string dir_;  // remote_workdir/<id>, absolute once created
};

}  // namespace driftscan::launch
