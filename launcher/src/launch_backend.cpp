// What the backends share: events, command logging, following the engine's
// event stream, and turning how it ended into a LaunchResult.
#include "launch_backend.hpp"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <regex>

namespace driftscan::launch {
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// mpirun's report of a lost host or a dead rank, reduced to one line naming the host.
std::string rank_death(const std::string& stderr_text) {
  // A host whose link (or whole machine) went away: ORTE's "node-died" report
  // ("ORTE has lost communication with a remote daemon. ... Remote daemon: [[j,0],1] on node H").
  if (auto at = stderr_text.find("lost communication with a remote daemon"); at != std::string::npos) {
    static const std::regex lost(R"(Remote daemon: *\S+ on node (\S+))");
    std::smatch l;
    const std::string report = stderr_text.substr(at, 400);
    if (std::regex_search(report, l, lost))
      return l[1].str() + ": host lost (mpirun lost contact with it: network or node failure)";
  }
  static const std::regex re(
      R"(process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?)");
  std::smatch m;
  if (std::regex_search(stderr_text, m, re))
    return "rank " + m[1].str() + (m[2].str() == "0" ? "" : " (pid " + m[2].str() + ")") + " on host " + m[3].str() +
           " died: signal " + m[4].str() + (m[5].matched ? " (" + m[5].str() + ")" : "");
  static const std::regex re2(R"(rank (\d+) with PID (\d+) on node (\S+) exited)");
  if (std::regex_search(stderr_text, m, re2))
    return "rank " + m[1].str() + " (pid " + m[2].str() + ") on host " + m[3].str() + " exited unexpectedly";
  return "";
}

// mpirun's own report that the job is over because a rank ended early or
// died (or lost its host); after it, mpirun has only to end the others.
bool mpirun_reported_end(const std::string& stderr_text) {
  for (const char* s : {"exited with non-zero status", "exited on signal", "lost communication with a remote daemon",
                        "before MPI_INIT completed", "exited unexpectedly"})
    if (stderr_text.find(s) != std::string::npos) return true;
  return false;
}

// One line for a job whose mpirun had to be killed after a rank's end:
// which rank, its exit code, where, and whether it failed in MPI start-up.
std::string early_end(const std::string& stderr_text, double grace_s) {
  std::string what = rank_death(stderr_text);
  if (what.empty()) {
    static const std::regex name(R"(Process name: *\[\[\d+,\d+\],(\d+)\])");
    static const std::regex code(R"(Exit code: *(-?\d+))");
    std::smatch n, c;
    what = std::regex_search(stderr_text, n, name) ? "rank " + n[1].str() : std::string("a rank");
    what += std::regex_search(stderr_text, c, code) ? " exited with code " + c[1].str() : " ended early";
  }
  static const std::regex init(R"(\[([^:\]\s]+):\d+\] Local abort before MPI_INIT completed)");
  std::smatch h;
  if (std::regex_search(stderr_text, h, init)) what += " (in MPI start-up on host " + h[1].str() + ")";
  char grace[32];
  std::snprintf(grace, sizeof grace, "%g", grace_s);
  return what + "; mpirun did not end within " + grace + " s after it and was stopped";
}

}  // namespace

void LaunchContext::emit(const json& e) {
  if (callback) {
    try {
      callback(e);
    } catch (...) {
      // A faulty consumer must not take the launcher down.
    }
  }
}

void LaunchContext::log(const std::string& message, const std::string& level) {
  emit({{"event", "log"}, {"level", level}, {"source", "launcher"}, {"message", message}});
}

void LaunchContext::log_command(const std::vector<std::string>& argv) {
  emit({{"event", "log"},
        {"level", "info"},
        {"source", "launcher"},
        {"command", argv},
        {"message", "$ " + shell_join(argv)}});
}

CommandOutput LaunchContext::run_logged(const std::vector<std::string>& argv, double timeout_s,
                                        const std::string& stdin_text) {
  log_command(argv);
  return run_command(argv, timeout_s, stdin_text);
}

void LaunchContext::on_engine_line(const std::string& line) {
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

void LaunchContext::on_stderr_line(const std::string& line) {
  stderr_tail += line + "\n";
  if (stderr_tail.size() > 16384) stderr_tail.erase(0, stderr_tail.size() - 16384);
  if (line.rfind("error: ", 0) == 0) return;  // the engine's copy of its error event
  emit({{"event", "log"}, {"level", "warning"}, {"source", "stderr"}, {"message", line}});
}

// Remote result paths -> where they will be after fetching.
json LaunchContext::local_files(const json& files) const {
  if (remote_output.empty() || !profile.fetch_results || profile.shared_output) return files;
  json out = files;
  for (auto it = out.begin(); it != out.end(); ++it) {
    if (!it->is_string()) continue;
    std::string p = it->get<std::string>();
    if (p.rfind(remote_output, 0) == 0) *it = job.output + p.substr(remote_output.size());
  }
  return out;
}

int LaunchContext::follow(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          const std::function<void()>& on_cancel, const std::function<void()>& on_kill) {
  log_command(argv);
  Subprocess p(argv, env);
  unsigned passed_on = 0;  // cancel requests handed to the job
  bool killed = false;
  Clock::time_point kill_at = Clock::time_point::max();
  double grace_s = 0.0;                                   // what kill_at was set from, for the message
  Clock::time_point stuck_at = Clock::time_point::max();  // set once mpirun reports a rank's end
  auto out = [&](const std::string& l) { on_engine_line(l); };
  auto err = [&](const std::string& l) { on_stderr_line(l); };
  auto deadline = [](double s) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  while (p.pump(100, out, err)) {
    // Every request is passed on: a follow's second one cancels its finish.
    for (const unsigned asked = cancel_requests; passed_on < asked && !killed; ++passed_on) {
      const bool first = passed_on == 0;
      log(first ? "cancelling" : "cancelling again");
      const double s = first ? options.cancel_grace_s : options.abort_grace_s;
      if (deadline(s) < kill_at) {
        kill_at = deadline(s);
        grace_s = s;
      }
      if (on_cancel) on_cancel();
      else p.send_signal(SIGUSR1);  // mpirun forwards it to every rank: they stop cleanly with code 4
    }
    if (!killed && Clock::now() > kill_at) {
      log("the job did not stop within " + std::to_string(grace_s) + " s; killing it", "warning");
      if (on_kill) on_kill();
      p.signal_group(SIGKILL);
      killed = true;
    }
    if (stuck_at == Clock::time_point::max() && mpirun_reported_end(stderr_tail))
      stuck_at = deadline(options.death_grace_s);
    if (!killed && Clock::now() > stuck_at) {
      stuck_after_death = early_end(stderr_tail, options.death_grace_s);
      log(stuck_after_death, "warning");
      if (on_kill) on_kill();
      p.signal_group(SIGKILL);
      killed = true;
    }
  }
  return p.wait();
}

LaunchResult LaunchContext::finish(int code) {
  LaunchResult r;
  r.exit_code = code;
  r.result_folder = job.output;
  r.files = result_files;
  r.remote_id = remote_id;
  std::string death = rank_death(stderr_tail);
  if (code == 0) {
    r.status = LaunchStatus::done;
  } else if (!result_files.empty() && code != 2) {
    // The engine sends `result` only once its outputs are committed: a rank
    // lost or a cancel after that does not undo them (mpirun still ends non-zero).
    r.status = LaunchStatus::done;
    r.exit_code = 0;
    const std::string what = !death.empty()        ? death
                             : saw_cancelled_event ? std::string("a cancel")
                                                   : "driftscan-engine ended with code " + std::to_string(code);
    log(what + " after the outputs were complete: they are kept", "warning");
  } else if (!stuck_after_death.empty()) {
    r.status = LaunchStatus::failed;
    r.exit_code = 3;
    r.message = stuck_after_death;
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
    r.message = !death.empty() ? death
                : !engine_error.empty()
                    ? engine_error
                    : [&] {
                        std::string t = stderr_tail;
                        while (!t.empty() && t.back() == '\n') t.pop_back();
                        auto pos = t.rfind('\n');
                        return "driftscan-engine ended with code " + std::to_string(code) +
                               (t.empty() ? "" : ": " + t.substr(pos == std::string::npos ? 0 : pos + 1));
                      }();
    if (code != 2 && code != 5) r.exit_code = 3;  // bad input and a failed registration keep their codes
  }
  return r;
}

}  // namespace driftscan::launch
