// driftscan-engine: the MPI program. Parses the subcommand, initialises MPI
// with threads, turns SIGINT/SIGTERM into a cancel request seen by every
// rank (CancelRelay), and maps driftscan::Error to the documented exit codes:
// 0 done, 2 bad input or usage, 3 failure during the run, 4 cancelled, 5 registration failed.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>

#include <mpi.h>
#include <CLI/CLI.hpp>

#include "driftscan/core/error.hpp"
#include "driftscan/core/large_allocations.hpp"
#include "driftscan/mpi/jobs/job_runner.hpp"
#include "driftscan/mpi/runtime/cancel_relay.hpp"
#include "driftscan/mpi/runtime/command.hpp"
#include "driftscan/mpi/runtime/job_input.hpp"

namespace {
driftscan::CancelToken g_cancel;

// One line to stderr in one write: several ranks' lines arrive through
// mpirun's forwarding, and a line written in pieces interleaves with another's.
void say_line(const std::string& line) {
  const std::string l = line + "\n";
  std::fwrite(l.data(), 1, l.size(), stderr);
  std::fflush(stderr);
}
extern "C" void on_signal(int) { g_cancel.request(); }

// The first argument that is neither an option nor --progress's value: the command.
std::string first_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--progress") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] != '-') return a;
  }
  return {};
}

}  // namespace

static int run_engine(int argc, char** argv) {
  // Answered before MPI starts: the launcher probes remote installs with it.
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("driftscan-engine %s\n", DRIFTSCAN_VERSION);
    return 0;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  driftscan::reuse_large_allocations();  // after MPI, which sets the allocator's options of its own
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // mpirun forwards SIGUSR1/SIGUSR2 to every rank: a cancel that reaches all of them.
  std::signal(SIGUSR1, on_signal);
  // A file-size limit (ulimit -f, a quota-like cap) makes a write fail with
  // EFBIG, reported like a full disk, instead of killing the rank.
  std::signal(SIGXFSZ, SIG_IGN);

  CLI::App app{"driftscan-engine: registration, averaging and spectra of EM image series"};
  app.require_subcommand(1);
  app.fallthrough();  // --progress may come after the subcommand
  app.footer(
      "Exit codes: 0 done, 2 bad input or usage, 3 failure during the run, 4 cancelled, 5 registration failed "
      "(most frames share no structure with frame 0; no average written).");
  std::string progress_mode = isatty(STDERR_FILENO) ? "bar" : "plain";
  app.add_option("--progress", progress_mode, "Progress output: bar, plain, json (events on stdout) or none")
      ->check(CLI::IsMember({"bar", "plain", "json", "none"}));
  app.set_version_flag("--version", std::string("driftscan-engine ") + DRIFTSCAN_VERSION);

  std::vector<std::pair<CLI::App*, driftscan::mpi::Runner>> runners;
  std::set<std::string> names;
  for (const auto& spec : driftscan::mpi::registered_commands()) {
    if (!names.insert(spec.name).second) continue;  // one implementation per name
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    runners.emplace_back(sub, spec.setup(*sub));
  }

  int code = 0;
  // CLI11 says only "A subcommand is required" for a misspelt command: name it.
  if (const std::string word = first_word(argc, argv); !word.empty() && !names.count(word)) {
    if (rank == 0) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      std::cerr << "driftscan-engine: unknown command '" << word << "' (commands: " << known << ")\n";
    }
    MPI_Finalize();
    return 2;
  }
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

  auto relay = std::make_unique<driftscan::mpi::CancelRelay>(MPI_COMM_WORLD, g_cancel, provided >= MPI_THREAD_MULTIPLE);
  driftscan::mpi::RunContext ctx{MPI_COMM_WORLD, rank, size, *progress, g_cancel};
  std::string message;
  for (auto& [sub, runner] : runners) {
    if (!sub->parsed()) continue;
    try {
      code = runner(ctx);
    } catch (const driftscan::Error& e) {
      code = e.exit_code();
      message = e.what();
    } catch (const std::bad_alloc&) {
      code = 3;
      message = "out of memory";
    } catch (const std::exception& e) {
      code = 3;
      message = e.what();
    }
  }
  if (code == 4 || (code != 0 && g_cancel.cancelled() && message == "cancelled")) {
    code = 4;
    progress->cancelled();
  } else if (code != 0) {
    progress->error(message, code);
    if (rank == 0 && (progress_mode == "json" || progress_mode == "none")) say_line("error: " + message);
    // Stop the other ranks too, so they do not wait for this one.
    g_cancel.request();
  }

  bool clean = true;
  if (code != 0 && size > 1) {
    clean = relay->all_stopped(1.0);
    // Rank 0's error is the event; another rank adds a line, saying who it
    // is, only when its error is not the one rank 0 reported (an error the
    // ranks agreed on, or the same bad file seen by all, is said once).
    const bool repeated = clean && relay->root_text(message) == message;
    const std::string who = "rank " + std::to_string(rank) + " on " + driftscan::mpi::host_name() + ": ";
    if (rank != 0 && code != 4 && !repeated)
      say_line("driftscan-engine: " + (message.rfind(who, 0) == 0 ? "" : who) + message);
  }
  relay->stop();
  if (!clean) {
    // Some rank is stuck (in a collective, or dead): only an abort ends it.
    if (rank == 0 || code != 4)
      say_line("driftscan-engine: rank " + std::to_string(rank) + " on " + driftscan::mpi::host_name() +
               ": other ranks did not stop; aborting the job");
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  relay.reset();
  MPI_Finalize();
  return code;
}

// What run_engine does not catch (an allocation failure while setting up,
// before a subcommand runs) still ends with one line and exit 3 — and ends
// the other ranks — instead of std::terminate.
int main(int argc, char** argv) {
  try {
    return run_engine(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "driftscan-engine: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "driftscan-engine: unexpected failure\n";
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 3);
  return 3;
}
