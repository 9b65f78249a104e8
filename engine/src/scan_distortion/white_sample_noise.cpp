#include "driftscan/scan_distortion/white_sample_noise.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace driftscan {

namespace {

template <class Value>
WhiteSampleNoise white_noise_of(const std::vector<DriftSample>& samples, Value y, std::size_t min_per_lag) {
  std::vector<const DriftSample*> s;
  for (const DriftSample& d : samples)
    if (d.weight > 0.0 && std::isfinite(d.weight) && std::isfinite(d.t) && std::isfinite(d.dx) && std::isfinite(d.dy))
      s.push_back(&d);
  WhiteSampleNoise out;
  if (s.size() < 8) return out;
  std::stable_sort(s.begin(), s.end(), [](const DriftSample* a, const DriftSample* b) { return a->t < b->t; });
  // The runs' spacing: the median gap (frames have more bands than fly-backs).
  std::vector<double> gaps;
  for (std::size_t i = 1; i < s.size(); ++i) gaps.push_back(s[i]->t - s[i - 1]->t);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<long>(gaps.size() / 2), gaps.end());
  const double dt = gaps[gaps.size() / 2];
  if (!(dt > 0.0)) return out;
  // Normal equations in (omega, beta, gamma).
  double a[3][3] = {}, b[3] = {};
  std::array<std::size_t, 4> per_lag{};
  for (std::size_t m = 1; m <= 3; ++m)
    for (std::size_t i = m; i + m < s.size(); ++i) {
      // Evenly spaced within one run: every gap between i - m and i + m is dt.
      bool even = true;
      for (std::size_t j = i - m + 1; j <= i + m && even; ++j) even = std::fabs(s[j]->t - s[j - 1]->t - dt) < 0.25 * dt;
      if (!even) continue;
      const double d = y(s[i - m]) - 2.0 * y(s[i]) + y(s[i + m]);
      const double md = static_cast<double>(m);
      const double x[3] = {1.0 / s[i - m]->weight + 4.0 / s[i]->weight + 1.0 / s[i + m]->weight, 2.0 * md - 1.0,
                           md * md * md * md};
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) a[r][c] += x[r] * x[c];
        b[r] += x[r] * d * d;
      }
      ++per_lag[m];
    }
  if (per_lag[1] < min_per_lag || per_lag[2] < min_per_lag || per_lag[3] < min_per_lag) return out;
  // Cramer's rule for the 3x3 (omega and beta).
  auto det3 = [](const double m[3][3]) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  const double det = det3(a);
  if (!(std::fabs(det) > 0.0)) return out;
  double a0[3][3];
  for (int r = 0; r < 3; ++r) a0[r][0] = b[r], a0[r][1] = a[r][1], a0[r][2] = a[r][2];
  out.scale = std::max(0.0, det3(a0) / det);
  double a1[3][3];
  for (int r = 0; r < 3; ++r) a1[r][0] = a[r][0], a1[r][1] = b[r], a1[r][2] = a[r][2];
  out.walk = std::max(0.0, det3(a1) / det);
  out.triples = per_lag[1] + per_lag[2] + per_lag[3];
  return out;
}

}  // namespace

WhiteSampleNoise white_sample_noise(const std::vector<DriftSample>& samples, int axis, std::size_t min_per_lag) {
  return white_noise_of(
      samples, [axis](const DriftSample* d) { return axis == 0 ? d->dx : d->dy; }, min_per_lag);
}

WhiteSampleNoise white_sample_noise(const std::vector<DriftSample>& samples,
                                    const std::function<Point(const DriftSample&)>& along, std::size_t min_per_lag) {
  return white_noise_of(
      samples,
      [&along](const DriftSample* d) {
        const Point u = along(*d);
        return d->dx * u.x + d->dy * u.y;
      },
      min_per_lag);
}

}  // namespace driftscan
