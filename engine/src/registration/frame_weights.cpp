// Per-frame weights of the mean; see frame_weights.hpp.
#include "driftscan/registration/frame_weights.hpp"

#include <algorithm>
#include <cmath>

namespace driftscan {

namespace {
double median_of_positive(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !(x > 0) || !std::isfinite(x); }), v.end());
  if (v.empty()) return 0.0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}
}  // namespace

std::vector<double> inverse_variance_weights(const std::vector<double>& sigma,
                                             const std::vector<double>& noise_variance) {
  const std::size_t n = sigma.size();
  if (noise_variance.size() != n || n == 0) return {};
  std::vector<double> s2(n);
  for (std::size_t k = 0; k < n; ++k) s2[k] = sigma[k] * sigma[k];
  const double mv = median_of_positive(noise_variance), ms = median_of_positive(s2);
  std::vector<double> w(n, 0.0);
  double sum = 0.0;
  std::size_t counted = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (!std::isfinite(sigma[k]) || !std::isfinite(noise_variance[k])) continue;
    const double rel = (mv > 0 ? noise_variance[k] / mv : 1.0) + (ms > 0 ? s2[k] / ms : 0.0);
    w[k] = rel > 0 ? 1.0 / rel : 1.0;
    sum += w[k];
    ++counted;
  }
  if (sum > 0)
    for (double& x : w) x *= static_cast<double>(counted) / sum;
  return w;
}

}  // namespace driftscan
