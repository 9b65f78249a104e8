// The list of names as messages spell it (enum_names.hpp).
#include "driftscan/core/enum_names.hpp"

namespace driftscan {

std::string one_of(const std::vector<std::string>& names, const char* last_separator) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last_separator : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace driftscan
