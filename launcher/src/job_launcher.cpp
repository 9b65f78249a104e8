// The launcher's background thread: stage, run, follow, fetch — for the
// local, ssh and slurm profiles. Every external command goes through
// run_logged()/follow(), so each one is logged exactly as run.
#include "driftscan/launch/job_launcher.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

#include "driftscan/error.hpp"
#include "subprocess.hpp"

namespace driftscan::launch {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* to_string(LaunchStatus status) {
  switch (status) {
    case LaunchStatus::done: return "done";
    case LaunchStatus::failed: return "failed";
    case LaunchStatus::cancelled: return "cancelled";
  }
  return "failed";
}

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

std::string make_job_id() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(rd() & 0xffff));
  return std::string("job-") + buf + "-" + suffix;
}

std::string basename_of(const std::string& path) {
  fs::path p(path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// One-line diagnosis of a failed ssh/scp connection (ssh exits 255).
std::string ssh_failure(const Profile& p, const CommandOutput& r) {
  std::string where = (p.user.empty() ? "" : p.user + "@") + p.host + (p.port ? ":" + std::to_string(p.port) : "");
  const std::string& e = r.err;
  if (r.timed_out) return "host " + where + " did not answer within " + std::to_string(p.connect_timeout_s) + " s";
  auto has = [&](const char* s) { return e.find(s) != std::string::npos; };
  if (has("Permission denied") || has("Too many authentication failures"))
    return "authentication to " + where + " failed (key not accepted; check identity_file and the remote authorized_keys)";
  if (has("Host key verification failed") || has("REMOTE HOST IDENTIFICATION HAS CHANGED"))
    return "host key of " + where + " is unknown or changed (connect once with ssh to accept it)";
  if (has("Could not resolve hostname")) return "host " + p.host + " not found (name does not resolve)";
  if (has("Connection refused") || has("timed out") || has("No route to host") || has("Network is unreachable"))
    return "host " + where + " is unreachable (" + [&] {
      std::string line = e.substr(0, e.find('\n'));
      return line;
    }() + ")";
  std::string first = e.substr(0, e.find('\n'));
  if (has("Connection closed") && has("scp"))
    return "scp to " + where + " failed: connection closed (does the server offer the sftp subsystem?)";
  return "ssh to " + where + " failed" + (first.empty() ? "" : ": " + first);
}

// mpirun's report of a dead rank, reduced to one line naming rank and host.
std::string rank_death(const std::string& stderr_text) {
  static const std::regex re(
      R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?)");
  std::smatch m;
  if (std::regex_search(stderr_text, m, re))
    return "rank " + m[1].str() + (m[2].str() == "0" ? "" : " (pid " + m[2].str() + ")") + " on host " + m[3].str() +
           " died: signal " + m[4].str() +
           (m[5].matched ? " (" + m[5].str() + ")" : "");
  static const std::regex re2(R"(rank (\d+) with PID (\d+) on node (\S+) exited)");
  if (std::regex_search(stderr_text, m, re2))
    return "rank " + m[1].str() + " (pid " + m[2].str() + ") on host " + m[3].str() + " exited unexpectedly";
  return "";
}

}  // namespace

struct JobLauncher::Impl {
  Profile profile;
  Job job;
  LaunchOptions options;
  EventCallback callback;

  std::thread thread;
  std::atomic<bool> cancel_requested{false};
  mutable std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  LaunchResult result;
  bool started = false;

  // Set while following the job (background thread only).
  std::string staging;
  std::string remote_dir;       // ssh/slurm: remote_workdir/<id>
  std::string remote_output;    // remote results folder
  std::string slurm_job;
  std::string stderr_tail;
  json result_files = json::object();
  bool saw_cancelled_event = false;
  bool launcher_error_emitted = false;
  std::string engine_error;

  void emit(const json& e) {
    if (callback) {
      try {
        callback(e);
      } catch (...) {
        // A faulty consumer must not take the launcher down.
      }
    }
  }
  void log(const std::string& message, const std::string& level = "info") {
    emit({{"event", "log"}, {"level", level}, {"source", "launcher"}, {"message", message}});
  }
  void log_command(const std::vector<std::string>& argv) {
    emit({{"event", "log"}, {"level", "info"}, {"source", "launcher"}, {"command", argv},
          {"message", "$ " + shell_join(argv)}});
  }

  CommandOutput run_logged(const std::vector<std::string>& argv, double timeout_s, const std::string& stdin_text = "") {
    log_command(argv);
    return run_command(argv, timeout_s, stdin_text);
  }

  // ---- ssh plumbing
  std::string target() const { return (profile.user.empty() ? "" : profile.user + "@") + profile.host; }
  std::vector<std::string> ssh_common(bool scp) const {
    std::vector<std::string> a{"-o", "BatchMode=yes", "-o", "ConnectTimeout=" + std::to_string(profile.connect_timeout_s),
                               "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"};
    if (profile.port) {
      a.push_back(scp ? "-P" : "-p");
      a.push_back(std::to_string(profile.port));
    }
    if (!profile.identity_file.empty()) {
      a.push_back("-i");
      a.push_back(profile.identity_file);
    }
    for (const auto& o : profile.ssh_options) {
      a.push_back("-o");
      a.push_back(o);
    }
    return a;
  }
  std::vector<std::string> ssh(const std::string& remote_command) const {
    std::vector<std::string> a{"ssh"};
    auto c = ssh_common(false);
    a.insert(a.end(), c.begin(), c.end());
    a.push_back(target());
    a.push_back(remote_command);
    return a;
  }
  std::vector<std::string> scp(std::vector<std::string> paths) const {
    std::vector<std::string> a{"scp", "-q", "-r"};
    auto c = ssh_common(true);
    a.insert(a.end(), c.begin(), c.end());
    a.insert(a.end(), paths.begin(), paths.end());
    return a;
  }
  std::string remote_engine() const {
    return profile.remote_install.empty() ? "driftscan-engine" : profile.remote_install + "/bin/driftscan-engine";
  }
  std::string remote_prelude() const {
    std::string s;
    for (const auto& l : profile.setup_lines) s += l + "\n";
    return s;
  }
  double connect_bound() const { return profile.connect_timeout_s + 5.0; }

  // Runs a short remote command; an ssh-level failure becomes one clear error.
  CommandOutput remote(const std::string& command, double timeout_s) {
    auto r = run_logged(ssh(command), timeout_s);
    if (r.timed_out && r.out.empty() && r.err.empty())
      throw failure("host " + target() + " did not answer within " + std::to_string(static_cast<int>(timeout_s)) + " s");
    if (r.exit_code == 255) throw failure(ssh_failure(profile, r));
    return r;
  }

  void check_remote_engine() {
    std::string eng = remote_engine();
    std::string cmd = remote_prelude() + "if command -v " + shell_quote(eng) + " >/dev/null 2>&1; then " +
                      shell_quote(eng) + " --version; else echo DRIFTSCAN_ENGINE_MISSING; exit 127; fi";
    auto r = remote(cmd, connect_bound() + 20);
    if (r.out.find("DRIFTSCAN_ENGINE_MISSING") != std::string::npos || r.exit_code == 127)
      throw failure("driftscan-engine not found on " + profile.host + " at " + eng +
                    " (set remote_install in profile '" + profile.name + "')");
    std::string version = r.out;
    while (!version.empty() && (version.back() == '\n' || version.back() == ' ')) version.pop_back();
    if (auto pos = version.rfind(' '); pos != std::string::npos) version = version.substr(pos + 1);
    if (r.exit_code != 0) throw failure("driftscan-engine on " + profile.host + " failed to start: " + r.err.substr(0, r.err.find('\n')));
    if (version != options.expected_version)
      throw failure("version mismatch: driftscan-engine on " + profile.host + " is " + version + ", this is " +
                    options.expected_version + " (install the same version remotely)");
    log("remote engine on " + profile.host + ": version " + version);
  }

  // ---- the job file and the engine's command line
  std::vector<std::string> mpirun_prefix(bool remote_side) const {
    std::vector<std::string> a{profile.mpirun, "-np", std::to_string(profile.ranks)};
    if (!remote_side) {
      if (::geteuid() == 0) a.push_back("--allow-run-as-root");
      if (profile.ranks > static_cast<int>(std::thread::hardware_concurrency())) a.push_back("--oversubscribe");
    }
    if (!profile.bind_to.empty()) {
      a.push_back("--bind-to");
      a.push_back(profile.bind_to);
    }
    a.push_back("-x");
    a.push_back("OMP_NUM_THREADS");
    if (!remote_side && local_oversubscribed()) a.insert(a.end(), {"-x", "OMP_WAIT_POLICY"});
    a.insert(a.end(), profile.mpirun_args.begin(), profile.mpirun_args.end());
    return a;
  }

  bool local_oversubscribed() const {
    return profile.kind == ProfileKind::local &&
           static_cast<long>(profile.ranks) * profile.threads > static_cast<long>(std::thread::hardware_concurrency());
  }

  std::vector<std::string> engine_command(const std::string& job_file) const {
    if (profile.kind == ProfileKind::local) {
      auto a = mpirun_prefix(false);
      a.push_back(local_engine(profile));
      for (const char* s : {"--progress", "json", "run"}) a.push_back(s);
      a.push_back(job_file);
      return a;
    }
    auto a = mpirun_prefix(true);
    a.push_back(remote_engine());
    for (const char* s : {"--progress", "json", "run"}) a.push_back(s);
    a.push_back(job_file);
    return a;
  }

  // Remote shell snippet that adds the run-as-root / oversubscribe flags only where needed.
  std::string remote_mpirun_line(const std::string& job_file) const {
    auto a = engine_command(job_file);
    std::string line = shell_quote(a[0]) + " $extra";
    for (std::size_t i = 1; i < a.size(); ++i) line += " " + shell_quote(a[i]);
    return "extra=; [ \"$(id -u)\" = 0 ] && extra=\"--allow-run-as-root\"; "
           "[ " + std::to_string(profile.ranks) + " -gt \"$(nproc)\" ] && extra=\"$extra --oversubscribe\"; "
           "export OMP_NUM_THREADS=" + std::to_string(profile.threads) + "\n" + line;
  }

  void prepare_staging() {
    if (!options.staging_dir.empty()) {
      staging = options.staging_dir;
      fs::create_directories(staging);
    } else {
      std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + std::string("/driftscan-launch-XXXXXX");
      std::vector<char> buf(tmpl.begin(), tmpl.end());
      buf.push_back('\0');
      if (!mkdtemp(buf.data())) throw failure("cannot create a staging folder in " + tmpl);
      staging = buf.data();
    }
  }

  // ---- following the engine's event stream
  void on_engine_line(const std::string& line) {
    if (line.empty()) return;
    json e;
    try {
      e = json::parse(line);
    } catch (...) {
      log(line);  // not an event: pass through as a log line
      return;
    }
    if (!e.is_object() || !e.contains("event")) {
      log(line);
      return;
    }
    const std::string ev = e["event"].is_string() ? e["event"].get<std::string>() : "";
    if (ev == "result" && e.contains("files")) {
      e["files"] = local_files(e["files"]);
      result_files = e["files"];
    } else if (ev == "cancelled") {
      saw_cancelled_event = true;
    } else if (ev == "error" && e.contains("message") && e["message"].is_string()) {
      engine_error = e["message"].get<std::string>();
    }
    emit(e);
  }
  void on_stderr_line(const std::string& line) {
    stderr_tail += line + "\n";
    if (stderr_tail.size() > 16384) stderr_tail.erase(0, stderr_tail.size() - 16384);
    if (line.rfind("error: ", 0) == 0) return;  // the engine's copy of its error event
    emit({{"event", "log"}, {"level", "warning"}, {"source", "stderr"}, {"message", line}});
  }
  // Remote result paths -> where they will be after fetching.
  json local_files(const json& files) const {
    if (remote_output.empty() || !profile.fetch_results) return files;
    json out = files;
    for (auto it = out.begin(); it != out.end(); ++it) {
      if (!it->is_string()) continue;
      std::string p = it->get<std::string>();
      if (p.rfind(remote_output, 0) == 0) *it = job.output + p.substr(remote_output.size());
    }
    return out;
  }

  // Runs the engine (or a follower) to its end, honouring cancel().
  int follow(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::function<void()>& on_cancel) {
    log_command(argv);
    Subprocess p(argv, env);
    bool cancelling = false;
    Clock::time_point cancel_at{};
    auto out = [&](const std::string& l) { on_engine_line(l); };
    auto err = [&](const std::string& l) { on_stderr_line(l); };
    while (p.pump(100, out, err)) {
      if (cancel_requested && !cancelling) {
        cancelling = true;
        cancel_at = Clock::now();
        log("cancelling");
        if (on_cancel) on_cancel();
        else p.send_signal(SIGUSR1);  // mpirun forwards it to every rank: they stop cleanly with code 4
      }
      if (cancelling && Clock::now() - cancel_at > std::chrono::duration<double>(options.cancel_grace_s)) {
        log("the job did not stop within " + std::to_string(options.cancel_grace_s) + " s; killing it", "warning");
        p.signal_group(SIGKILL);
        cancelling = false;  // once
        cancel_at = Clock::now() + std::chrono::hours(1000);
      }
    }
    return p.wait();
  }

  LaunchResult finish(int code) {
    LaunchResult r;
    r.exit_code = code;
    r.result_folder = job.output;
    r.files = result_files;
    r.remote_id = !slurm_job.empty() ? slurm_job : remote_dir;
    std::string death = rank_death(stderr_tail);
    if (code == 0) {
      r.status = LaunchStatus::done;
    } else if (!death.empty() && !cancel_requested) {
      // mpirun stops the survivors (they report "cancelled"): the death is the news.
      r.status = LaunchStatus::failed;
      r.exit_code = 3;
      r.message = death;
    } else if (code == 4 || saw_cancelled_event || (cancel_requested && code != 2)) {
      r.status = LaunchStatus::cancelled;
      r.exit_code = 4;
      r.message = "cancelled";
    } else {
      r.status = LaunchStatus::failed;
      r.message = !death.empty() ? death : !engine_error.empty() ? engine_error : [&] {
        std::string t = stderr_tail;
        while (!t.empty() && t.back() == '\n') t.pop_back();
        auto pos = t.rfind('\n');
        return "driftscan-engine ended with code " + std::to_string(code) +
               (t.empty() ? "" : ": " + t.substr(pos == std::string::npos ? 0 : pos + 1));
      }();
      if (code != 2) r.exit_code = 3;
    }
    return r;
  }

  // ---- the three kinds
  LaunchResult run_local() {
    std::string job_file = staging + "/job.json";
    save_job(job, job_file);
    std::map<std::string, std::string> env{{"OMP_NUM_THREADS", std::to_string(profile.threads)}};
    // More workers than cores (a laptop run): OpenMP threads spinning between
    // parallel regions would take the cores from the ranks doing the work.
    if (local_oversubscribed()) env["OMP_WAIT_POLICY"] = "passive";
    if (::geteuid() == 0) {
      env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
      env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    }
    int code = follow(engine_command(job_file), env, nullptr);
    return finish(code);
  }

  void stage_remote() {
    check_remote_engine();
    std::string id = make_job_id();
    std::string wd = profile.remote_workdir.empty() ? "." : profile.remote_workdir;
    remote_dir = wd + "/" + id;
    remote_output = remote_dir + "/results";
    auto r = remote("mkdir -p " + shell_quote(remote_dir) + " && cd " + shell_quote(remote_dir) + " && pwd",
                    connect_bound() + 10);
    if (r.exit_code != 0) throw failure("cannot create " + remote_dir + " on " + profile.host + ": " + r.err);
    std::string abs = r.out.substr(0, r.out.find('\n'));
    if (!abs.empty()) {
      remote_dir = abs;
      remote_output = remote_dir + "/results";
    }
    Job remote_job = job;
    remote_job.output = remote_output;
    if (!job.input.empty() && !profile.shared_input) {
      std::string name = basename_of(job.input);
      auto s = run_logged(scp({job.input, target() + ":" + remote_dir + "/" + name}), 3600);
      if (s.exit_code != 0) throw failure("staging " + job.input + " to " + profile.host + " failed: " +
                                          (s.exit_code == 255 ? ssh_failure(profile, s) : s.err.substr(0, s.err.find('\n'))));
      remote_job.input = remote_dir + "/" + name;
    }
    save_job(remote_job, staging + "/job.json");
    auto s = run_logged(scp({staging + "/job.json", target() + ":" + remote_dir + "/job.json"}), connect_bound() + 30);
    if (s.exit_code != 0) throw failure("copying the job file to " + profile.host + " failed: " + ssh_failure(profile, s));
  }

  void fetch_results() {
    if (!profile.fetch_results) return;
    std::string tmp = staging + "/fetched";
    std::error_code ec;
    fs::remove_all(tmp, ec);
    auto r = run_logged(scp({target() + ":" + remote_output, tmp}), 3600);
    if (r.exit_code != 0)
      throw failure("fetching results from " + profile.host + ":" + remote_output + " failed: " +
                    (r.exit_code == 255 ? ssh_failure(profile, r) : r.err.substr(0, r.err.find('\n'))));
    fs::create_directories(job.output);
    for (const auto& entry : fs::directory_iterator(tmp)) {
      fs::path dest = fs::path(job.output) / entry.path().filename();
      fs::remove_all(dest, ec);
      fs::rename(entry.path(), dest);
    }
    log("results fetched into " + job.output);
  }

  LaunchResult run_ssh() {
    stage_remote();
    if (cancel_requested) return finish(4);
    std::string pidfile = remote_dir + "/engine.pid";
    std::string cmd = remote_prelude() + "cd " + shell_quote(remote_dir) + " || exit 3\n" +
                      "echo $$ > " + shell_quote(pidfile) + "\n" + remote_mpirun_line(remote_dir + "/job.json");
    // exec: the remote shell becomes mpirun, so engine.pid is mpirun's pid.
    auto pos = cmd.rfind('\n');
    cmd.insert(pos + 1, "exec ");
    auto on_cancel = [&] {
      remote("kill -USR1 $(cat " + shell_quote(pidfile) + ") 2>/dev/null", connect_bound());
    };
    int code = follow(ssh(cmd), {}, on_cancel);
    if (code == 255) {
      CommandOutput co;
      co.exit_code = 255;
      co.err = stderr_tail;
      throw failure(ssh_failure(profile, co));
    }
    LaunchResult r = finish(code);
    if (r.status == LaunchStatus::done) fetch_results();
    return r;
  }

  std::string batch_script() const {
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
    s += remote_prelude();
    s += "[ \"$(id -u)\" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n";
    s += "export OMP_NUM_THREADS=" + std::to_string(profile.cpus_per_task) + "\n";
    // The engine's events go to a file the launcher follows from the login node.
    std::vector<std::string> a{profile.mpirun, "-np", std::to_string(profile.nodes * profile.tasks_per_node)};
    if (!profile.bind_to.empty()) a.insert(a.end(), {"--bind-to", profile.bind_to});
    a.insert(a.end(), {"-x", "OMP_NUM_THREADS"});
    a.insert(a.end(), profile.mpirun_args.begin(), profile.mpirun_args.end());
    a.insert(a.end(), {remote_engine(), "--progress", "json", "run", remote_dir + "/job.json"});
    s += "extra=; [ \"$(id -u)\" = 0 ] && extra=--allow-run-as-root\n";
    s += shell_quote(a[0]) + " $extra";
    for (std::size_t i = 1; i < a.size(); ++i) s += " " + shell_quote(a[i]);
    s += " > " + shell_quote(remote_dir + "/progress.jsonl") + "\n";
    return s;
  }

  LaunchResult run_slurm() {
    stage_remote();
    if (cancel_requested) return finish(4);
    std::string script = batch_script();
    {
      std::ofstream(staging + "/job.sbatch") << script;
    }
    auto c = run_logged(scp({staging + "/job.sbatch", target() + ":" + remote_dir + "/job.sbatch"}), connect_bound() + 30);
    if (c.exit_code != 0) throw failure("copying the batch script to " + profile.host + " failed: " + ssh_failure(profile, c));
    auto r = remote(remote_prelude() + "cd " + shell_quote(remote_dir) + " && sbatch --parsable job.sbatch",
                    connect_bound() + 30);
    if (r.exit_code != 0) throw failure("sbatch on " + profile.host + " failed: " + r.err.substr(0, r.err.find('\n')));
    slurm_job = r.out.substr(0, r.out.find_first_of(";\n"));
    log("submitted Slurm job " + slurm_job + " on " + profile.host);
    emit({{"event", "log"}, {"level", "info"}, {"source", "launcher"}, {"slurm_job", slurm_job},
          {"message", "slurm job " + slurm_job + " submitted"}});

    // One long-lived ssh follows the queue state and the progress file;
    // complete lines only, so a half-written event is never parsed.
    char poll_s[32];
    std::snprintf(poll_s, sizeof poll_s, "%.3g", profile.poll_interval_s);
    std::string follower = remote_prelude() + "cd " + shell_quote(remote_dir) + " || exit 3\n" +
        "id=" + slurm_job + "; n=0; last=\n"
        "while :; do\n"
        "  st=$(squeue -h -j $id -o %T 2>/dev/null)\n"
        "  if [ -f progress.jsonl ]; then t=$(wc -l < progress.jsonl)\n"
        "    if [ \"$t\" -gt \"$n\" ]; then tail -n +$((n+1)) progress.jsonl | head -n $((t-n)); n=$t; fi; fi\n"
        "  if [ \"$st\" != \"$last\" ] && [ -n \"$st\" ]; then echo \"{\\\"event\\\":\\\"log\\\",\\\"level\\\":\\\"info\\\",\\\"source\\\":\\\"slurm\\\",\\\"message\\\":\\\"slurm job $id $st\\\"}\"; last=$st; fi\n"
        "  case \"$st\" in PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUE*|RESIZING|SIGNALING|STAGE_OUT) ;; *) break ;; esac\n"
        "  sleep " + poll_s + "\n"
        "done\n"
        "if [ -f progress.jsonl ]; then t=$(wc -l < progress.jsonl); [ \"$t\" -gt \"$n\" ] && tail -n +$((n+1)) progress.jsonl; fi\n"
        "echo \"SLURM_FINAL $(scontrol show job $id 2>/dev/null | tr ' ' '\\n' | grep -E '^(JobState|ExitCode)=' | tr '\\n' ' ')\"\n";
    std::string final_line;
    auto on_cancel = [&] {
      auto r = remote(remote_prelude() + "scancel " + slurm_job, connect_bound());
      if (r.exit_code != 0)
        log("scancel " + slurm_job + " failed: " + r.err.substr(0, r.err.find('\n')), "warning");
    };
    log_command(ssh(follower));
    Subprocess p(ssh(follower));
    bool cancelled_sent = false;
    Clock::time_point cancel_at{};
    auto out = [&](const std::string& l) {
      if (l.rfind("SLURM_FINAL", 0) == 0) final_line = l;
      else on_engine_line(l);
    };
    auto err = [&](const std::string& l) { on_stderr_line(l); };
    while (p.pump(100, out, err)) {
      if (cancel_requested && !cancelled_sent) {
        cancelled_sent = true;
        cancel_at = Clock::now();
        log("cancelling: scancel " + slurm_job);
        on_cancel();
      }
      // Watchdog: a job Slurm does not end after scancel is not followed forever.
      if (cancelled_sent && Clock::now() - cancel_at > std::chrono::duration<double>(options.cancel_grace_s + 30.0)) {
        log("slurm job " + slurm_job + " did not end after scancel; no longer following it", "warning");
        p.signal_group(SIGKILL);
        break;
      }
    }
    int code = p.wait();
    if (code == 255) {
      CommandOutput co;
      co.exit_code = 255;
      co.err = stderr_tail;
      throw failure(ssh_failure(profile, co) + " while following Slurm job " + slurm_job);
    }
    std::smatch m;
    std::string state;
    int exit_code = 3;
    if (std::regex_search(final_line, m, std::regex(R"(JobState=(\S+))"))) state = m[1].str();
    if (std::regex_search(final_line, m, std::regex(R"(ExitCode=(\d+):(\d+))")))
      exit_code = std::stoi(m[1].str()) != 0 ? std::stoi(m[1].str()) : (std::stoi(m[2].str()) ? 128 + std::stoi(m[2].str()) : 0);
    log("slurm job " + slurm_job + " ended: " + (state.empty() ? "state unknown" : state));
    if (state == "COMPLETED") exit_code = 0;
    else if (state == "CANCELLED" || cancel_requested) exit_code = 4;
    else if (state.empty() && !result_files.empty()) exit_code = 0;
    else if (exit_code == 0) exit_code = 3;
    if (exit_code == 3 && engine_error.empty())
      engine_error = "slurm job " + slurm_job + " ended " + (state.empty() ? "in an unknown state" : state) +
                     " (see " + remote_dir + "/slurm-" + slurm_job + ".out on " + profile.host + ")";
    LaunchResult res = finish(exit_code);
    if (res.status == LaunchStatus::done) fetch_results();
    return res;
  }

  void run() {
    LaunchResult r;
    try {
      prepare_staging();
      log("profile '" + profile.name + "' (" + to_string(profile.kind) + "), staging in " + staging);
      if (profile.kind == ProfileKind::local) r = run_local();
      else if (profile.kind == ProfileKind::ssh) r = run_ssh();
      else r = run_slurm();
    } catch (const Error& e) {
      r = LaunchResult{};
      r.status = cancel_requested ? LaunchStatus::cancelled : LaunchStatus::failed;
      r.exit_code = cancel_requested ? 4 : e.exit_code();
      r.message = e.what();
      r.result_folder = job.output;
      if (r.status == LaunchStatus::cancelled) emit({{"event", "cancelled"}, {"source", "launcher"}});
      else emit({{"event", "error"}, {"source", "launcher"}, {"message", r.message}, {"code", r.exit_code}});
      launcher_error_emitted = true;
    } catch (const std::exception& e) {
      r = LaunchResult{};
      r.message = e.what();
      r.result_folder = job.output;
      emit({{"event", "error"}, {"source", "launcher"}, {"message", r.message}, {"code", 3}});
      launcher_error_emitted = true;
    }
    // Exactly one error event per failed launch: the engine's, or the launcher's.
    if (r.status == LaunchStatus::failed && (engine_error.empty() || r.message != engine_error) &&
        !launcher_error_emitted)
      emit({{"event", "error"}, {"source", "launcher"}, {"message", r.message}, {"code", r.exit_code}});
    if (options.staging_dir.empty() && !staging.empty()) {
      std::error_code ec;  // our own temporary folder: job file, batch script, fetched copy
      fs::remove_all(staging, ec);
    }
    std::lock_guard<std::mutex> lock(mu);
    result = r;
    done = true;
    cv.notify_all();
  }
};

JobLauncher::JobLauncher(Profile profile, Job job, LaunchOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->profile = std::move(profile);
  impl_->job = std::move(job);
  impl_->options = std::move(options);
}

JobLauncher::~JobLauncher() {
  if (impl_->thread.joinable()) {
    cancel();
    impl_->thread.join();
  }
}

void JobLauncher::on_event(EventCallback callback) { impl_->callback = std::move(callback); }

void JobLauncher::start() {
  if (impl_->started) throw bad_input("internal: JobLauncher::start() called twice");
  auto& job = impl_->job;
  const auto& p = impl_->profile;
  job.execution.profile = p.name;
  job.execution.ranks = p.kind == ProfileKind::slurm ? p.nodes * p.tasks_per_node : p.ranks;
  job.execution.threads = p.kind == ProfileKind::slurm ? p.cpus_per_task : p.threads;
  // Relative paths mean the caller's folder, wherever the engine runs.
  std::error_code ec;
  if (!job.output.empty()) job.output = fs::absolute(job.output, ec).string();
  if (!job.input.empty() && (p.kind == ProfileKind::local || !p.shared_input))
    job.input = fs::absolute(job.input, ec).string();
  validate(job);
  if (!job.input.empty() && (p.kind == ProfileKind::local || !p.shared_input) && !fs::exists(job.input))
    throw bad_input(job.input + ": input not found");
  impl_->started = true;
  impl_->thread = std::thread([this] { impl_->run(); });
}

void JobLauncher::cancel() { impl_->cancel_requested = true; }

bool JobLauncher::finished() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->done;
}

LaunchResult JobLauncher::wait() {
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->cv.wait(lock, [&] { return impl_->done; });
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  return impl_->result;
}

LaunchResult JobLauncher::result() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->result;
}

std::vector<std::string> JobLauncher::engine_command(const std::string& job_file) const {
  return impl_->engine_command(job_file);
}

}  // namespace driftscan::launch
