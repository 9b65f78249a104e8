// The signal gradient's share of the noise correlation; see signal_lag_factor.hpp.
#include "driftscan/registration/signal_lag_factor.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace driftscan {

std::vector<double> prefilter_autocorrelation(double sigma) {
  if (!(sigma > 0)) return {1.0};
  const int r = std::max(1, static_cast<int>(std::ceil(3.0 * sigma)));  // gaussian_smooth's reach
  std::vector<double> g(2 * static_cast<std::size_t>(r) + 1);
  double sum = 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    const double i = static_cast<double>(k) - r;
    sum += g[k] = std::exp(-0.5 * i * i / (sigma * sigma));
  }
  for (double& v : g) v /= sum;
  std::vector<double> a(2 * g.size() - 1, 0.0);
  for (std::size_t i = 0; i < g.size(); ++i)
    for (std::size_t j = 0; j < g.size(); ++j) a[i + g.size() - 1 - j] += g[i] * g[j];
  return a;
}

namespace {

// (a x a) * f, separable, zero outside the frame; float, the taps' loop
// outside the pixels' so that it vectorises (this runs once per frame).
std::vector<float> smooth(const std::vector<float>& f, int w, int h, const std::vector<float>& a) {
  const int r = static_cast<int>(a.size() / 2);
  const auto W = static_cast<std::size_t>(w);
  std::vector<float> padded(W + 2 * static_cast<std::size_t>(r), 0.0f), rows(f.size(), 0.0f), out(f.size(), 0.0f);
  for (int y = 0; y < h; ++y) {
    std::copy(f.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(y) * W),
              f.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(y) + 1) * W), padded.begin() + r);
    float* row = rows.data() + static_cast<std::size_t>(y) * W;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const float ai = a[i];
      const float* src = padded.data() + i;
      for (std::size_t x = 0; x < W; ++x) row[x] += ai * src[x];
    }
  }
  for (int y = 0; y < h; ++y) {
    float* dst = out.data() + static_cast<std::size_t>(y) * W;
    for (int i = std::max(-r, -y); i <= std::min(r, h - 1 - y); ++i) {
      const int tap = i + r, source_row = y + i;  // both >= 0 within the loop's bounds
      const float ai = a[static_cast<std::size_t>(tap)];
      const float* src = rows.data() + static_cast<std::size_t>(source_row) * W;
      for (std::size_t x = 0; x < W; ++x) dst[x] += ai * src[x];
    }
  }
  return out;
}

}  // namespace

std::array<double, 2> signal_lag_factor(const std::array<std::vector<float>, 2>& jf,
                                        const std::array<std::vector<float>, 2>& jg, int width, int height,
                                        double prefilter_sigma) {
  std::array<double, 2> out{1.0, 1.0};
  if (!(prefilter_sigma > 0)) return out;
  // a to 3 of its own sd (sigma sqrt 2): the rest holds 0.3% of its weight.
  const std::vector<double> full = prefilter_autocorrelation(prefilter_sigma);
  const int reach = std::min(static_cast<int>(full.size() / 2), static_cast<int>(std::ceil(4.25 * prefilter_sigma)));
  const std::vector<float> a(full.begin() + static_cast<std::ptrdiff_t>(full.size() / 2) - reach,
                             full.begin() + static_cast<std::ptrdiff_t>(full.size() / 2) + reach + 1);
  for (std::size_t axis = 0; axis < 2; ++axis) {
    const std::vector<float> s = smooth(jg[axis], width, height, a);
    double lagged = 0, power = 0;
    for (std::size_t q = 0; q < s.size(); ++q) {
      lagged += static_cast<double>(jf[axis][q]) * s[q];
      power += static_cast<double>(jf[axis][q]) * jg[axis][q];
    }
    // Too little signal for the ratio to mean anything: leave the smooth-signal model.
    if (power > 0 && std::isfinite(lagged)) out[axis] = std::clamp(lagged / power, 0.0, 1.0);
  }
  return out;
}

}  // namespace driftscan
