#include "remote_host.hpp"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>

#include "driftscan/core/error.hpp"

namespace driftscan::launch {
namespace fs = std::filesystem;

namespace {

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

}  // namespace

// One-line diagnosis of a failed ssh/scp connection (ssh exits 255).
std::string RemoteHost::failure_message(const CommandOutput& r) const {
  const Profile& p = ctx_.profile;
  std::string where = (p.user.empty() ? "" : p.user + "@") + p.host + (p.port ? ":" + std::to_string(p.port) : "");
  const std::string& e = r.err;
  if (r.timed_out) return "host " + where + " did not answer within " + std::to_string(p.connect_timeout_s) + " s";
  auto has = [&](const char* s) { return e.find(s) != std::string::npos; };
  if (has("Permission denied") || has("Too many authentication failures"))
    return "authentication to " + where +
           " failed (key not accepted; check identity_file and the remote authorized_keys)";
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

std::string RemoteHost::target() const {
  const Profile& p = ctx_.profile;
  return (p.user.empty() ? "" : p.user + "@") + p.host;
}

std::vector<std::string> RemoteHost::common_options(bool scp) const {
  const Profile& profile = ctx_.profile;
  std::vector<std::string> a{
      "-o", "BatchMode=yes",         "-o", "ConnectTimeout=" + std::to_string(profile.connect_timeout_s),
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

std::vector<std::string> RemoteHost::ssh(const std::string& remote_command) const {
  std::vector<std::string> a{"ssh"};
  auto c = common_options(false);
  a.insert(a.end(), c.begin(), c.end());
  a.push_back(target());
  a.push_back(remote_command);
  return a;
}

std::vector<std::string> RemoteHost::scp(std::vector<std::string> paths) const {
  std::vector<std::string> a{"scp", "-q", "-r"};
  auto c = common_options(true);
  a.insert(a.end(), c.begin(), c.end());
  a.insert(a.end(), paths.begin(), paths.end());
  return a;
}

std::string RemoteHost::engine() const {
  const Profile& p = ctx_.profile;
  return p.remote_install.empty() ? "driftscan-engine" : p.remote_install + "/bin/driftscan-engine";
}

std::string RemoteHost::prelude() const {
  std::string s;
  for (const auto& l : ctx_.profile.setup_lines) s += l + "\n";
  return s;
}

std::vector<std::string> RemoteHost::engine_command(int np, const std::string& job_file) const {
  const Profile& profile = ctx_.profile;
  std::vector<std::string> a{profile.mpirun, "-np", std::to_string(np)};
  if (!profile.bind_to.empty()) a.insert(a.end(), {"--bind-to", profile.bind_to});
  a.insert(a.end(), {"-x", "OMP_NUM_THREADS"});
  a.insert(a.end(), profile.mpirun_args.begin(), profile.mpirun_args.end());
  a.insert(a.end(), {engine(), "--progress", "json", "run", job_file});
  return a;
}

CommandOutput RemoteHost::run(const std::string& command, double timeout_s) {
  auto r = ctx_.run_logged(ssh(command), timeout_s);
  if (r.timed_out && r.out.empty() && r.err.empty())
    throw failure("host " + target() + " did not answer within " + std::to_string(static_cast<int>(timeout_s)) + " s");
  if (r.exit_code == 255) throw failure(failure_message(r));
  return r;
}

void RemoteHost::check_engine() {
  const Profile& profile = ctx_.profile;
  std::string eng = engine();
  std::string cmd = prelude() + "if command -v " + shell_quote(eng) + " >/dev/null 2>&1; then " + shell_quote(eng) +
                    " --version; else echo DRIFTSCAN_ENGINE_MISSING; exit 127; fi";
  auto r = run(cmd, connect_bound() + 20);
  if (r.out.find("DRIFTSCAN_ENGINE_MISSING") != std::string::npos || r.exit_code == 127)
    throw failure("driftscan-engine not found on " + profile.host + " at " + eng + " (set remote_install in profile '" +
                  profile.name + "')");
  std::string version = r.out;
  while (!version.empty() && (version.back() == '\n' || version.back() == ' ')) version.pop_back();
  if (auto pos = version.rfind(' '); pos != std::string::npos) version = version.substr(pos + 1);
  if (r.exit_code != 0)
    throw failure("driftscan-engine on " + profile.host + " failed to start: " + r.err.substr(0, r.err.find('\n')));
  const std::string& expected = ctx_.options.expected_version;
  if (version != expected)
    throw failure("version mismatch: driftscan-engine on " + profile.host + " is " + version + ", this is " + expected +
                  " (install the same version remotely)");
  ctx_.log("remote engine on " + profile.host + ": version " + version);
}

void RemoteHost::stage() {
  const Profile& profile = ctx_.profile;
  const Job& job = ctx_.job;
  check_engine();
  std::string id = make_job_id();
  std::string wd = profile.remote_workdir.empty() ? "." : profile.remote_workdir;
  dir_ = wd + "/" + id;
  auto r = run("mkdir -p " + shell_quote(dir_) + " && cd " + shell_quote(dir_) + " && pwd", connect_bound() + 10);
  if (r.exit_code != 0) throw failure("cannot create " + dir_ + " on " + profile.host + ": " + r.err);
  std::string abs = r.out.substr(0, r.out.find('\n'));
  if (!abs.empty()) dir_ = abs;
  ctx_.remote_output = profile.shared_output ? job.output : dir_ + "/results";
  ctx_.remote_id = dir_;
  Job remote_job = job;
  remote_job.output = ctx_.remote_output;
  if (!job.input.empty() && !profile.shared_input) {
    std::string name = basename_of(job.input);
    auto s = ctx_.run_logged(scp({job.input, target() + ":" + dir_ + "/" + name}), 3600);
    if (s.exit_code != 0)
      throw failure("staging " + job.input + " to " + profile.host +
                    " failed: " + (s.exit_code == 255 ? failure_message(s) : s.err.substr(0, s.err.find('\n'))));
    remote_job.input = dir_ + "/" + name;
  }
  save_job(remote_job, ctx_.staging + "/job.json");
  auto s =
      ctx_.run_logged(scp({ctx_.staging + "/job.json", target() + ":" + dir_ + "/job.json"}), connect_bound() + 30);
  if (s.exit_code != 0) throw failure("copying the job file to " + profile.host + " failed: " + failure_message(s));
}

void RemoteHost::fetch_results() {
  const Profile& profile = ctx_.profile;
  const Job& job = ctx_.job;
  if (!profile.fetch_results || profile.shared_output) return;
  std::string tmp = ctx_.staging + "/fetched";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  auto r = ctx_.run_logged(scp({target() + ":" + ctx_.remote_output, tmp}), 3600);
  if (r.exit_code != 0)
    throw failure("fetching results from " + profile.host + ":" + ctx_.remote_output +
                  " failed: " + (r.exit_code == 255 ? failure_message(r) : r.err.substr(0, r.err.find('\n'))));
  fs::create_directories(job.output);
  for (const auto& entry : fs::directory_iterator(tmp)) {
    fs::path dest = fs::path(job.output) / entry.path().filename();
    fs::remove_all(dest, ec);
    fs::rename(entry.path(), dest);
  }
  ctx_.log("results fetched into " + job.output);
}

}  // namespace driftscan::launch
