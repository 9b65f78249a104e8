#include "driftscan/mpi/local_scan.hpp"

#include "driftscan/error.hpp"

namespace driftscan::mpi {

const char* to_string(LocalStrategy strategy) {
  switch (strategy) {
    case LocalStrategy::scan_then_map: return "scan-then-map";
    case LocalStrategy::reduce_then_scan: return "reduce-then-scan";
  }
  return "unknown";
}

const std::vector<LocalStrategy>& all_local_strategies() {
  static const std::vector<LocalStrategy> all{LocalStrategy::scan_then_map, LocalStrategy::reduce_then_scan};
  return all;
}

LocalStrategy local_strategy_from_string(const std::string& name) {
  for (auto s : all_local_strategies())
    if (name == to_string(s)) return s;
  throw bad_input("unknown local scan strategy '" + name + "' (expected scan-then-map or reduce-then-scan)");
}

}  // namespace driftscan::mpi
