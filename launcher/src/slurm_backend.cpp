// The slurm profile: the job is staged like an ssh job, then a generated batch
// script is submitted with sbatch on the login node; one long-lived ssh
// follows the queue state (squeue, then scontrol for the end) and streams the
// job's progress file back. cancel() runs scancel; a further cancel() runs
// `scancel --signal=KILL --full` and stops following the job abort_grace_s
// later if it has not ended. What Slurm does with that (22.05, Debian 12,
// tests/integration/test_launch_slurm.sh): once the first scancel has made
// the job CANCELLED (COMPLETING while its processes stop) it refuses any
// further signal ("Invalid job id specified"); a job whose batch script
// ignores SIGTERM is then killed by Slurm itself after its KillWait. The
// launcher's part is to send it and to return, not to wait for KillWait.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>

#include "driftscan/core/error.hpp"
#include "launch_backend.hpp"
#include "remote_host.hpp"

namespace driftscan::launch {

namespace {
using Clock = std::chrono::steady_clock;

class SlurmBackend : public LaunchBackend {
 public:
  explicit SlurmBackend(LaunchContext& context) : ctx_(context), host_(context) {}

  // As for ssh (what --dry-run shows); the batch script runs nodes x tasks_per_node ranks.
  std::vector<std::string> engine_command(const std::string& job_file) const override {
    return host_.engine_command(ctx_.profile.ranks, job_file);
  }

  LaunchResult run() override;

 private:
  std::string batch_script() const;
  // The script a long-lived ssh runs on the login node to follow the job.
  std::string follower_script(const std::string& slurm_job) const;

  LaunchContext& ctx_;
  RemoteHost host_;
};

std::string SlurmBackend::batch_script() const {
  const Profile& profile = ctx_.profile;
  const std::string& remote_dir = host_.dir();
  std::string s = "#!/bin/bash\n#SBATCH --job-name=driftscan\n";
  s += "#SBATCH --nodes=" + std::to_string(profile.nodes) + "\n";
  s += "#SBATCH --ntasks-per-node=" + std::to_string(profile.tasks_per_node) + "\n";
  s += "#SBATCH --cpus-per-task=" + std::to_string(profile.cpus_per_task) + "\n";
  if (!profile.partition.empty()) s += "#SBATCH --partition=" + profile.partition + "\n";
  if (!profile.account.empty()) s += "#SBATCH --account=" + profile.account + "\n";
  if (!profile.time_limit.empty()) s += "#SBATCH --time=" + profile.time_limit + "\n";
  s += "#SBATCH --chdir=" + remote_dir + "\n";
  s += "#SBATCH --output=" + remote_dir + "/slurm-%j.out\n";
  for (const auto& l : profile.sbatch_lines) s += "#SBATCH " + l + "\n";
  s += host_.prelude();
  s += "[ \"$(id -u)\" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n";
  s += "export OMP_NUM_THREADS=" + std::to_string(profile.cpus_per_task) + "\n";
  // The engine's events go to a file the launcher follows from the login node.
  auto a = host_.engine_command(profile.nodes * profile.tasks_per_node, remote_dir + "/job.json");
  s += "extra=; [ \"$(id -u)\" = 0 ] && extra=--allow-run-as-root\n";
  s += shell_quote(a[0]) + " $extra";
  for (std::size_t i = 1; i < a.size(); ++i) s += " " + shell_quote(a[i]);
  s += " > " + shell_quote(remote_dir + "/progress.jsonl") + "\n";
  return s;
}

std::string SlurmBackend::follower_script(const std::string& slurm_job) const {
  // One long-lived ssh follows the queue state and the progress file;
  // complete lines only, so a half-written event is never parsed.
  char poll_s[32];
  std::snprintf(poll_s, sizeof poll_s, "%.3g", ctx_.profile.poll_interval_s);
  const std::string& remote_dir = host_.dir();
  return host_.prelude() + "cd " + shell_quote(remote_dir) + " || exit 3\n" + "id=" + slurm_job +
         "; n=0; last=\n"
         "while :; do\n"
         "  st=$(squeue -h -j $id -o %T 2>/dev/null)\n"
         "  if [ -f progress.jsonl ]; then t=$(wc -l < progress.jsonl)\n"
         "    if [ \"$t\" -gt \"$n\" ]; then tail -n +$((n+1)) progress.jsonl | head -n $((t-n)); n=$t; fi; fi\n"
         "  if [ \"$st\" != \"$last\" ] && [ -n \"$st\" ]; then echo "
         "\"{\\\"event\\\":\\\"log\\\",\\\"level\\\":\\\"info\\\",\\\"source\\\":\\\"slurm\\\",\\\"message\\\":"
         "\\\"slurm "
         "job $id $st\\\"}\"; last=$st; fi\n"
         "  case \"$st\" in PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUE*|RESIZING|SIGNALING|STAGE_OUT) ;; "
         "*) "
         "break ;; esac\n"
         "  sleep " +
         poll_s +
         "\n"
         "done\n"
         "if [ -f progress.jsonl ]; then t=$(wc -l < progress.jsonl); [ \"$t\" -gt \"$n\" ] && tail -n +$((n+1)) "
         "progress.jsonl; fi\n"
         "fin=$(scontrol show job $id 2>/dev/null | tr ' ' '\\n' | grep -E '^(JobState|ExitCode)=' | tr '\\n' ' ')\n"
         "echo \"SLURM_FINAL $fin\"\n"
         // mpirun's own report of a failure (a dead rank, a lost host) is in the job's output file.
         "case \"$fin\" in *JobState=COMPLETED*) ;; *) tail -n 40 slurm-$id.out 2>/dev/null | sed 's/^/SLURM_OUT /' ;; "
         "esac\n";
}

LaunchResult SlurmBackend::run() {
  const Profile& profile = ctx_.profile;
  host_.stage();
  if (ctx_.cancel_requested) return ctx_.finish(4);
  const std::string& remote_dir = host_.dir();
  std::string script = batch_script();
  { std::ofstream(ctx_.staging + "/job.sbatch") << script; }
  auto c = ctx_.run_logged(host_.scp({ctx_.staging + "/job.sbatch", host_.target() + ":" + remote_dir + "/job.sbatch"}),
                           host_.connect_bound() + 30);
  if (c.exit_code != 0)
    throw failure("copying the batch script to " + profile.host + " failed: " + host_.failure_message(c));
  auto r = host_.run(host_.prelude() + "cd " + shell_quote(remote_dir) + " && sbatch --parsable job.sbatch",
                     host_.connect_bound() + 30);
  if (r.exit_code != 0) throw failure("sbatch on " + profile.host + " failed: " + r.err.substr(0, r.err.find('\n')));
  const std::string slurm_job = r.out.substr(0, r.out.find_first_of(";\n"));
  if (!slurm_job.empty()) ctx_.remote_id = slurm_job;
  ctx_.log("submitted Slurm job " + slurm_job + " on " + profile.host);
  ctx_.emit({{"event", "log"},
             {"level", "info"},
             {"source", "launcher"},
             {"slurm_job", slurm_job},
             {"message", "slurm job " + slurm_job + " submitted"}});

  const std::string follower = follower_script(slurm_job);
  std::string final_line;
  auto scancel = [&](const std::string& args) {
    const std::string command = "scancel " + args + slurm_job;
    ctx_.log("cancelling: " + command);
    auto r = host_.run(host_.prelude() + command, host_.connect_bound());
    if (r.exit_code != 0) ctx_.log(command + " failed: " + r.err.substr(0, r.err.find('\n')), "warning");
  };
  ctx_.log_command(host_.ssh(follower));
  Subprocess p(host_.ssh(follower));
  bool cancelled_sent = false, kill_sent = false;
  Clock::time_point cancel_at{}, kill_at{};
  const auto after = [](Clock::time_point t, double s) { return Clock::now() - t > std::chrono::duration<double>(s); };
  auto out = [&](const std::string& l) {
    if (l.rfind("SLURM_FINAL", 0) == 0) final_line = l;
    else if (l.rfind("SLURM_OUT ", 0) == 0) ctx_.on_stderr_line(l.substr(10));
    else ctx_.on_engine_line(l);
  };
  auto err = [&](const std::string& l) { ctx_.on_stderr_line(l); };
  while (p.pump(100, out, err)) {
    if (ctx_.cancel_requested && !cancelled_sent) {
      cancelled_sent = true;
      cancel_at = Clock::now();
      scancel("");
    }
    if (cancelled_sent && !kill_sent && ctx_.cancel_requests >= 2) {
      kill_sent = true;
      kill_at = Clock::now();
      scancel("--signal=KILL --full ");
    }
    // Watchdog: a job Slurm does not end after scancel is not followed forever
    // (nor, after a further cancel, longer than abort_grace_s).
    if (kill_sent && after(kill_at, ctx_.options.abort_grace_s)) {
      ctx_.log("slurm job " + slurm_job + " did not end " + std::to_string(std::lround(ctx_.options.abort_grace_s)) +
                   " s after a further cancel; no longer following it (Slurm ends it after its KillWait)",
               "warning");
      p.signal_group(SIGKILL);
      break;
    }
    if (cancelled_sent && after(cancel_at, ctx_.options.cancel_grace_s + 30.0)) {
      ctx_.log("slurm job " + slurm_job + " did not end after scancel; no longer following it", "warning");
      p.signal_group(SIGKILL);
      break;
    }
  }
  int code = p.wait();
  if (code == 255) {
    CommandOutput co;
    co.exit_code = 255;
    co.err = ctx_.stderr_tail;
    throw failure(host_.failure_message(co) + " while following Slurm job " + slurm_job);
  }
  std::smatch m;
  std::string state;
  int exit_code = 3;
  if (std::regex_search(final_line, m, std::regex(R"(JobState=(\S+))"))) state = m[1].str();
  if (std::regex_search(final_line, m, std::regex(R"(ExitCode=(\d+):(\d+))")))
    exit_code =
        std::stoi(m[1].str()) != 0 ? std::stoi(m[1].str()) : (std::stoi(m[2].str()) ? 128 + std::stoi(m[2].str()) : 0);
  ctx_.log("slurm job " + slurm_job + " ended: " + (state.empty() ? "state unknown" : state));
  // No final state but the results arrived: Slurm forgot the job (no accounting), it completed.
  const bool cancelled = state == "CANCELLED" || ctx_.cancel_requested;
  if (state == "COMPLETED" || (!cancelled && state.empty() && !ctx_.result_files.empty())) exit_code = 0;
  else if (cancelled) exit_code = 4;
  else if (exit_code == 0) exit_code = 3;
  if (exit_code == 3 && ctx_.engine_error.empty())
    ctx_.engine_error = "slurm job " + slurm_job + " ended " + (state.empty() ? "in an unknown state" : state) +
                        " (see " + remote_dir + "/slurm-" + slurm_job + ".out on " + profile.host + ")";
  LaunchResult res = ctx_.finish(exit_code);
  if (res.status == LaunchStatus::done) host_.fetch_results();
  return res;
}

}  // namespace

std::unique_ptr<LaunchBackend> make_slurm_backend(LaunchContext& context) {
  return std::make_unique<SlurmBackend>(context);
}

}  // namespace driftscan::launch
