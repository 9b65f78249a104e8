#pragma once
// The subcommands of driftscan-engine. Each lives in its own file under
// mpi_backend/commands/ and registers itself with a static CommandRegistrar,
// so main.cpp never changes when a subcommand is added:
//
//   static driftscan::mpi::CommandRegistrar reg({"synth", "Synthesize a series",
//       [](CLI::App& app, CommandOptions& common) -> Runner {
//         auto opts = std::make_shared<SynthOptions>();
//         app.add_option("--frames", opts->frames, "...");
//         return [opts](RunContext& ctx) { ...; return 0; };
//       }});
//
// main.cpp owns MPI_Init_thread/Finalize, signal handling (CancelToken),
// the --progress flag and the mapping of driftscan::Error to exit codes.
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>
#include <CLI/CLI.hpp>

#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/progress.hpp"

namespace driftscan::mpi {

struct RunContext {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  int size = 1;
  Progress& progress;         // real on rank 0, silent on the other ranks
  const CancelToken& cancel;  // set by SIGINT/SIGTERM on any rank
};

using Runner = std::function<int(RunContext&)>;

struct CommandSpec {
  std::string name;
  std::string summary;
  // Declares the subcommand's options on `app`; returns what runs after parsing.
  std::function<Runner(CLI::App& app)> setup;
};

struct CommandRegistrar {
  explicit CommandRegistrar(CommandSpec spec);
};

const std::vector<CommandSpec>& registered_commands();

}  // namespace driftscan::mpi
