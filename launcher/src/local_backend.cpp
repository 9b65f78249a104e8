// The local profile: `mpirun -np R --bind-to B driftscan-engine --progress json
// run job.json` on this machine, with OMP_NUM_THREADS=T; cancel() is SIGUSR1
// to mpirun, which forwards it to every rank.
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "launch_backend.hpp"

namespace driftscan::launch {
namespace fs = std::filesystem;

namespace {

std::string self_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string local_engine(const Profile& p) {
  if (!p.engine.empty()) return p.engine;
  std::string here = self_dir();
  if (!here.empty() && ::access((here + "/driftscan-engine").c_str(), X_OK) == 0) return here + "/driftscan-engine";
  return "driftscan-engine";
}

class LocalBackend : public LaunchBackend {
 public:
  explicit LocalBackend(LaunchContext& context) : ctx_(context) {}

  std::vector<std::string> engine_command(const std::string& job_file) const override {
    const Profile& profile = ctx_.profile;
    std::vector<std::string> a{profile.mpirun, "-np", std::to_string(profile.ranks)};
    if (::geteuid() == 0) a.push_back("--allow-run-as-root");
    if (profile.ranks > static_cast<int>(std::thread::hardware_concurrency())) a.push_back("--oversubscribe");
    if (!profile.bind_to.empty()) {
      a.push_back("--bind-to");
      a.push_back(profile.bind_to);
    }
    a.push_back("-x");
    a.push_back("OMP_NUM_THREADS");
    if (oversubscribed()) a.insert(a.end(), {"-x", "OMP_WAIT_POLICY"});
    a.insert(a.end(), profile.mpirun_args.begin(), profile.mpirun_args.end());
    a.push_back(local_engine(profile));
    for (const char* s : {"--progress", "json", "run"}) a.push_back(s);
    a.push_back(job_file);
    return a;
  }

  LaunchResult run() override {
    std::string job_file = ctx_.staging + "/job.json";
    save_job(ctx_.job, job_file);
    std::map<std::string, std::string> env{{"OMP_NUM_THREADS", std::to_string(ctx_.profile.threads)}};
    // More workers than cores (a laptop run): OpenMP threads spinning between
    // parallel regions would take the cores from the ranks doing the work.
    if (oversubscribed()) env["OMP_WAIT_POLICY"] = "passive";
    if (::geteuid() == 0) {
      env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
      env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    }
    int code = ctx_.follow(engine_command(job_file), env, nullptr);
    return ctx_.finish(code);
  }

 private:
  bool oversubscribed() const {
    return static_cast<long>(ctx_.profile.ranks) * ctx_.profile.threads >
           static_cast<long>(std::thread::hardware_concurrency());
  }

  LaunchContext& ctx_;
};

}  // namespace

std::unique_ptr<LaunchBackend> make_local_backend(LaunchContext& context) {
  return std::make_unique<LocalBackend>(context);
}

}  // namespace driftscan::launch
