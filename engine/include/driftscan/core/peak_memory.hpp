#pragma once
// The process's peak resident memory (VmHWM of /proc/self/status): what a
// run's memory budget is checked against. getrusage's ru_maxrss is not
// used: it carries a parent's peak across exec.
#include <cstddef>

namespace driftscan {

// Bytes; 0 where /proc is not available.
std::size_t peak_resident_bytes();

}  // namespace driftscan
