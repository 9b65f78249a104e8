#include "driftscan/formats/series_signal.hpp"

namespace driftscan {

std::string SignalInfo::one_d_summary() const {
  std::string s = "1-D spectrum, " + std::to_string(width) + " channels";
  if (frames > 1) s += ", " + std::to_string(frames) + " spectra";
  return s;
}

void normalise_length_unit(double& size, std::string& unit) {
  std::string u;
  for (char c : unit)
    if (c != ' ' && c != '[' && c != ']' && c != '_') u += c;
  if (u == "\xc2\xb5m" || u == "micron") u = "um";
  if (u == "m") {
    size *= 1e9;
    u = "nm";
  } else if (u == "1/m") {
    size *= 1e-9;
    u = "1/nm";
  } else if (u == "A" || u == "\xc3\x85" || u == "Angstrom" || u == "angstrom") {
    size *= 0.1;
    u = "nm";
  } else if (u == "1/A" || u == "1/\xc3\x85") {
    size *= 10.0;
    u = "1/nm";
  }
  unit = u;
}

}  // namespace driftscan
