// driftscan-engine: the MPI program. Parses the subcommand, initialises MPI
// with threads, installs signal handlers for clean cancellation and maps
// driftscan::Error to the documented exit codes (see README).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <mpi.h>

#include "driftscan/error.hpp"
#include "driftscan/mpi/command.hpp"

namespace {
driftscan::CancelToken g_cancel;
extern "C" void on_signal(int) { g_cancel.request(); }
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  CLI::App app{"driftscan-engine: registration, averaging and spectra of EM image series"};
  app.require_subcommand(1);
  std::string progress_mode = isatty(STDOUT_FILENO) ? "bar" : "plain";
  app.add_option("--progress", progress_mode, "Progress output: bar, plain, json or none")
      ->check(CLI::IsMember({"bar", "plain", "json", "none"}));
  app.set_version_flag("--version", DRIFTSCAN_VERSION);

  std::vector<std::pair<CLI::App*, driftscan::mpi::Runner>> runners;
  for (const auto& spec : driftscan::mpi::registered_commands()) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    runners.emplace_back(sub, spec.setup(*sub));
  }

  int code = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (rank == 0) code = app.exit(e);
    else code = e.get_exit_code();
    MPI_Finalize();
    return code == 0 ? 0 : 2;
  }

  std::unique_ptr<driftscan::Progress> progress;
  if (rank != 0 || progress_mode == "none") progress = driftscan::make_silent_progress();
  else if (progress_mode == "json") progress = driftscan::make_json_progress(std::cout);
  else if (progress_mode == "bar") progress = driftscan::make_terminal_progress(std::cerr);
  else progress = driftscan::make_plain_progress(std::cerr);

  driftscan::mpi::RunContext ctx{MPI_COMM_WORLD, rank, size, *progress, g_cancel};
  for (auto& [sub, runner] : runners) {
    if (!sub->parsed()) continue;
    try {
      code = runner(ctx);
    } catch (const driftscan::Error& e) {
      if (e.kind() == driftscan::ErrorKind::cancelled) progress->cancelled();
      else progress->error(e.what(), e.exit_code());
      if (rank == 0 && progress_mode == "json") std::cerr << "error: " << e.what() << '\n';
      code = e.exit_code();
    } catch (const std::exception& e) {
      progress->error(e.what(), 3);
      code = 3;
    }
  }
  // A failing rank must not leave the others waiting in a collective.
  if (code != 0 && code != 4 && size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  MPI_Finalize();
  return code;
}
