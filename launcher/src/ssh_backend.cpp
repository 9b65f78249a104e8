// The ssh profile: the job is staged into remote_workdir/<id>/ and run there
// by one ssh whose output is the engine's event stream; cancel() is SIGUSR1
// to the remote mpirun (by its pid file, over a second ssh).
#include "driftscan/core/error.hpp"
#include "launch_backend.hpp"
#include "remote_host.hpp"

namespace driftscan::launch {

namespace {

class SshBackend : public LaunchBackend {
 public:
  explicit SshBackend(LaunchContext& context) : ctx_(context), host_(context) {}

  std::vector<std::string> engine_command(const std::string& job_file) const override {
    return host_.engine_command(ctx_.profile.ranks, job_file);
  }

  LaunchResult run() override {
    host_.stage();
    if (ctx_.cancel_requested) return ctx_.finish(4);
    const std::string& remote_dir = host_.dir();
    std::string pidfile = remote_dir + "/engine.pid";
    std::string cmd = host_.prelude() + "cd " + shell_quote(remote_dir) + " || exit 3\n" + "echo $$ > " +
                      shell_quote(pidfile) + "\n" + mpirun_line(remote_dir + "/job.json");
    // exec: the remote shell becomes mpirun, so engine.pid is mpirun's pid.
    auto pos = cmd.rfind('\n');
    cmd.insert(pos + 1, "exec ");
    auto on_cancel = [&] {
      host_.run("kill -USR1 $(cat " + shell_quote(pidfile) + ") 2>/dev/null", host_.connect_bound());
    };
    // sshd makes the remote shell, now mpirun, a process-group leader: the
    // group holds the ranks too.
    auto on_kill = [&] {
      host_.run("p=$(cat " + shell_quote(pidfile) + ") && { kill -KILL -- -$p || kill -KILL $p; } 2>/dev/null",
                host_.connect_bound());
    };
    int code = ctx_.follow(host_.ssh(cmd), {}, on_cancel, on_kill);
    if (code == 255) {
      CommandOutput co;
      co.exit_code = 255;
      co.err = ctx_.stderr_tail;
      throw failure(host_.failure_message(co));
    }
    LaunchResult r = ctx_.finish(code);
    if (r.status == LaunchStatus::done) host_.fetch_results();
    return r;
  }

 private:
  // Remote shell snippet that adds the run-as-root / oversubscribe flags only where needed.
  std::string mpirun_line(const std::string& job_file) const {
    auto a = engine_command(job_file);
    std::string line = shell_quote(a[0]) + " $extra";
    for (std::size_t i = 1; i < a.size(); ++i) line += " " + shell_quote(a[i]);
    return "extra=; [ \"$(id -u)\" = 0 ] && extra=\"--allow-run-as-root\"; "
           "[ " +
           std::to_string(ctx_.profile.ranks) +
           " -gt \"$(nproc)\" ] && extra=\"$extra --oversubscribe\"; "
           "export OMP_NUM_THREADS=" +
           std::to_string(ctx_.profile.threads) + "\n" + line;
  }

  LaunchContext& ctx_;
  RemoteHost host_;
};

}  // namespace

std::unique_ptr<LaunchBackend> make_ssh_backend(LaunchContext& context) {
  return std::make_unique<SshBackend>(context);
}

}  // namespace driftscan::launch
