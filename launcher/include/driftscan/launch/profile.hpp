#pragma once
// Launch profiles: where and how driftscan-engine runs. Stored in
// $XDG_CONFIG_HOME/driftscan/profiles.json (default ~/.config/driftscan/);
// resources/profiles.example.json shows every field. Qt-free.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace driftscan::launch {

enum class ProfileKind { local, ssh, slurm };
const char* to_string(ProfileKind kind);

struct Profile {
  std::string name = "local";
  ProfileKind kind = ProfileKind::local;

  // --- every kind: how the engine is started
  int ranks = 1;                         // mpirun -np (ssh, local); total tasks = nodes * tasks_per_node (slurm)
  int threads = 1;                       // OMP_NUM_THREADS
  std::string bind_to = "none";          // mpirun --bind-to (none, core, socket, ...)
  std::vector<std::string> mpirun_args;  // extra arguments placed before the program
  std::string mpirun = "mpirun";
  // local: path of driftscan-engine ("" = next to the running program, then PATH)
  std::string engine;

  // --- ssh and slurm: the remote side (the system ssh/scp are called, so
  // ~/.ssh/config, agents and ProxyJump apply)
  std::string host;                               // host name or ~/.ssh/config alias
  std::string user;                               // "" = ssh's default
  int port = 0;                                   // 0 = ssh's default
  std::string identity_file;                      // "" = ssh's default
  std::vector<std::string> ssh_options;           // extra "-o" options, e.g. "ProxyJump=gw"
  std::string remote_install;                     // folder holding bin/driftscan-engine ("" = driftscan-engine on PATH)
  std::string remote_workdir = "driftscan-jobs";  // jobs run in remote_workdir/<job id>/
  std::vector<std::string> setup_lines;           // shell lines run first ("module load openmpi", "export X=1")
  bool shared_input = false;                      // input path valid on the remote as is (else staged with scp)
  bool fetch_results = true;                      // copy the results folder back into the job's output
  // The job's output path is valid on the remote as is (a shared file system): the
  // engine writes there, nothing is fetched, and --resume finds the checkpoints.
  bool shared_output = false;
  int connect_timeout_s = 10;  // bound on every connection attempt

  // --- slurm
  int nodes = 1;
  int tasks_per_node = 1;
  int cpus_per_task = 1;
  std::string partition;  // "" = the cluster's default
  std::string account;
  std::string time_limit = "01:00:00";
  std::vector<std::string> sbatch_lines;  // extra "#SBATCH ..." options, e.g. "--mem=4G"
  double poll_interval_s = 2.0;           // squeue / progress-file follow interval
};

nlohmann::json to_json(const Profile& p);
// Throws driftscan::Error (bad_input) naming `source` and the offending field.
Profile profile_from_json(const nlohmann::json& j, const std::string& source);

// $XDG_CONFIG_HOME/driftscan/profiles.json, or ~/.config/driftscan/profiles.json.
std::string default_profiles_path();
// {"profiles": [ {...}, ... ]}. A missing file yields just the built-in `local`.
std::vector<Profile> load_profiles(const std::string& path);
void save_profiles(const std::vector<Profile>& profiles, const std::string& path);  // atomic
// Throws bad_input listing the known names when `name` is not there.
const Profile& find_profile(const std::vector<Profile>& profiles, const std::string& name);

}  // namespace driftscan::launch
