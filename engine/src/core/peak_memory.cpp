#include "driftscan/core/peak_memory.hpp"

#include <cstdlib>
#include <fstream>
#include <string>

namespace driftscan {

std::size_t peak_resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return static_cast<std::size_t>(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
  return 0;
}

}  // namespace driftscan
