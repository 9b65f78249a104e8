#include "driftscan/mpi/scan/local_scan.hpp"

#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/job/job_fields.hpp"

namespace driftscan::mpi {

// In the order of the engine's local_strategy_names(), which spells them.
const std::vector<LocalStrategy>& all_local_strategies() {
  static const std::vector<LocalStrategy> all{LocalStrategy::reduce_then_scan, LocalStrategy::scan_then_map};
  return all;
}

const char* to_string(LocalStrategy strategy) {
  const auto& all = all_local_strategies();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i] == strategy) return local_strategy_names()[i].c_str();
  return "unknown";
}

LocalStrategy local_strategy_from_string(const std::string& name) {
  for (auto s : all_local_strategies())
    if (name == to_string(s)) return s;
  throw bad_input("unknown local scan strategy '" + name + "' (expected " + one_of(local_strategy_names()) + ")");
}

}  // namespace driftscan::mpi
