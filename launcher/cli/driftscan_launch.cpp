// driftscan-launch: runs a job file through a launch profile (local mpirun,
// ssh, or Slurm over ssh) and shows its progress. Exit codes are the
// engine's: 0 done, 2 bad input or usage, 3 failure, 4 cancelled, 5 registration failed.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "driftscan/core/error.hpp"
#include "driftscan/launch/job_launcher.hpp"
#include "driftscan/launch/profile.hpp"

namespace {
// Signals received: each is one cancel request (a follow's second one cancels its finish).
volatile std::sig_atomic_t g_stops = 0;
extern "C" void on_signal(int) { g_stops = g_stops + 1; }
}  // namespace

static int run(int argc, char** argv) {
  using namespace driftscan;
  using namespace driftscan::launch;
  CLI::App app{
      "driftscan-launch: run a DriftScan job file locally, over ssh or through Slurm.\n"
      "Profiles: " +
      default_profiles_path()};
  std::string job_file, profile_name, profiles_file = default_profiles_path(), output, progress = "plain";
  bool dry_run = false, list = false, check_only = false, resume = false;
  app.add_option("job", job_file, "Job file (JSON, see docs/protocol.md)");
  app.add_option("--profile,-p", profile_name, "Profile name (default: the job's execution.profile)");
  app.add_option("--profiles", profiles_file, "Profiles file")->capture_default_str();
  app.add_option("--output,-o", output, "Results folder (overrides the job's output)");
  app.add_option("--progress", progress, "json: the engine's events, one per line, on stdout; plain: readable lines")
      ->check(CLI::IsMember({"json", "plain"}))
      ->capture_default_str();
  app.add_flag("--resume", resume,
               "Continue from the checkpoints in the job's output (a profile with shared_output, or local)");
  app.add_flag("--dry-run", dry_run, "Print the engine command for the profile and exit");
  app.add_flag("--list-profiles", list, "List the profiles and exit");
  app.add_flag("--check", check_only, "Only check that the profile's host and engine are usable");
  app.set_version_flag("--version", DRIFTSCAN_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    auto profiles = load_profiles(profiles_file);
    if (list) {
      for (const auto& p : profiles)
        std::cout << p.name << "\t" << to_string(p.kind) << (p.host.empty() ? "" : "\t" + p.host) << '\n';
      return 0;
    }
    Job job;
    if (!job_file.empty()) job = load_job(job_file);
    else if (!check_only) throw bad_input("no job file given (driftscan-launch JOB.json; see --help)");
    if (!output.empty()) job.output = output;
    if (resume) job.execution.resume = true;
    if (check_only) {
      // A tiny synth job is the cheapest real end-to-end probe of a profile.
      job = Job{};
      job.command = "synth";
      job.synth.frames = 2;
      job.synth.width = job.synth.height = 32;
      job.output = output.empty() ? std::string("/tmp/driftscan-check-") + std::to_string(getpid()) : output;
    }
    const Profile& profile = find_profile(profiles, profile_name.empty() ? job.execution.profile : profile_name);
    LaunchOptions options;
    // A follow's first cancel ends the follow and the engine finishes the
    // results, which takes minutes on a long series: as long as the app allows.
    if (job.follow.enabled) options.cancel_grace_s = 600.0;
    JobLauncher launcher(profile, job, options);
    if (dry_run) {
      for (const auto& a : launcher.engine_command("job.json")) std::cout << a << ' ';
      std::cout << '\n';
      return 0;
    }
    launcher.on_event([&](const nlohmann::json& e) {
      if (progress == "json") {
        std::cout << e.dump() << '\n' << std::flush;
        return;
      }
      std::string ev = e.value("event", "");
      if (ev == "progress") {
        std::fprintf(stderr, "%-8s %zu/%zu\n", e.value("phase", "").c_str(), e.value("done", std::size_t(0)),
                     e.value("total", std::size_t(0)));
      } else if (ev == "log") {
        std::cerr << (e.value("level", "") == "warning" ? "warning: " : "") << e.value("message", "") << '\n';
      } else if (ev == "error") {
        std::cerr << "error: " << e.value("message", "") << '\n';
      } else if (ev == "result") {
        for (auto it = e["files"].begin(); it != e["files"].end(); ++it)
          std::cout << it.key() << ": " << (it->is_string() ? it->get<std::string>() : it->dump()) << '\n';
      } else if (ev == "cancelled") {
        std::cerr << "cancelled\n";
      }
    });
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    launcher.start();
    for (std::sig_atomic_t passed_on = 0; !launcher.finished(); usleep(50000))
      for (const std::sig_atomic_t stops = g_stops; passed_on < stops; ++passed_on) launcher.cancel();
    LaunchResult r = launcher.wait();
    if (r.status == LaunchStatus::failed) std::cerr << "driftscan-launch: " << r.message << '\n';
    if (r.status == LaunchStatus::done && check_only) std::cerr << "profile '" << profile.name << "' works\n";
    return r.exit_code;
  } catch (const Error& e) {
    std::cerr << "driftscan-launch: " << e.what() << '\n';
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "driftscan-launch: " << e.what() << '\n';
    return 3;
  }
}

// Everything run() does not catch (an allocation failure while parsing) still
// ends with one line and the failure exit code, never std::terminate.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "driftscan-launch: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "driftscan-launch: unexpected failure\n";
  }
  return 3;
}
