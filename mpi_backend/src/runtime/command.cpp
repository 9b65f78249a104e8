#include "driftscan/mpi/runtime/command.hpp"

namespace driftscan::mpi {
namespace {
std::vector<CommandSpec>& registry() {
  static std::vector<CommandSpec> commands;
  return commands;
}
}  // namespace

CommandRegistrar::CommandRegistrar(CommandSpec spec) { registry().push_back(std::move(spec)); }

const std::vector<CommandSpec>& registered_commands() { return registry(); }

}  // namespace driftscan::mpi
