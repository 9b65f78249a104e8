#include "driftscan/core/apodisation_window.hpp"

#include <algorithm>
#include <cmath>

namespace driftscan {
namespace {
constexpr double kPi = 3.14159265358979323846;
}

std::vector<double> hann_window(std::size_t n) {
  std::vector<double> w(n, 1.0);
  if (n > 1)
    for (std::size_t i = 0; i < n; ++i) w[i] = 0.5 - 0.5 * std::cos(2 * kPi * double(i) / double(n - 1));
  return w;
}

std::vector<double> tukey_window(std::size_t n, double alpha) {
  std::vector<double> w(n, 1.0);
  const double a = std::clamp(alpha, 1e-6, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double u = (double(i) + 0.5) / double(n);
    if (u < a / 2) w[i] = 0.5 - 0.5 * std::cos(2 * kPi * u / a);
    else if (u > 1 - a / 2) w[i] = 0.5 - 0.5 * std::cos(2 * kPi * (1 - u) / a);
  }
  return w;
}

}  // namespace driftscan
