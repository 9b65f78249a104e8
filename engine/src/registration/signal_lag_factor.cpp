// The signal gradient's share of the noise correlation; see signal_lag_factor.hpp.
#include "driftscan/registration/signal_lag_factor.hpp"

#include "driftscan/core/simd_level.hpp"
#include "registration/information_row.hpp"

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

int signal_lag_stride(double prefilter_sigma) {
  return prefilter_sigma > 0 ? std::max(1, static_cast<int>(std::lround(1.5 * prefilter_sigma))) : 1;
}

namespace {

// out[x] += a in[x], x = 0..n-1.
DRIFTSCAN_KERNEL void axpy(float* out, const float* in, float a, int n) {
#pragma omp simd
  for (int x = 0; x < n; ++x) out[x] += a * in[x];
}
DRIFTSCAN_AVX2_TARGET void axpy_avx2(float* out, const float* in, float a, int n) { axpy(out, in, a, n); }
void axpy_baseline(float* out, const float* in, float a, int n) { axpy(out, in, a, n); }

}  // namespace

void SignalLagSums::add_scaled(float* out, const float* in, float a, int n) {
  (simd_level() == SimdLevel::avx2 ? axpy_avx2 : axpy_baseline)(out, in, a, n);
}

SignalLagSums::SignalLagSums(int width, int height, double prefilter_sigma, int stride, int row_step) {
  reset(width, height, prefilter_sigma, stride, row_step);
}

void SignalLagSums::reset(int width, int height, double prefilter_sigma, int stride, int row_step) {
  width_ = std::max(0, width);
  height_ = std::max(0, height);
  stride_ = std::max(1, stride);
  row_step_ = std::max(1, row_step);
  nx_ = (width_ + stride_ - 1) / stride_;
  ny_ = (height_ + stride_ - 1) / stride_;
  a_.clear();
  if (!(prefilter_sigma > 0)) return;  // factor() = 1: nothing to keep
  // a to 3 of its own sd (sigma sqrt 2): the rest holds 0.3% of its weight.
  if (prefilter_sigma != a_sigma_) {
    a_sigma_ = prefilter_sigma;
    const std::vector<double> full = prefilter_autocorrelation(prefilter_sigma);
    const int reach = std::min(static_cast<int>(full.size() / 2), static_cast<int>(std::ceil(4.25 * prefilter_sigma)));
    a_kept_.assign(full.begin() + static_cast<std::ptrdiff_t>(full.size() / 2) - reach,
                   full.begin() + static_cast<std::ptrdiff_t>(full.size() / 2) + reach + 1);
  }
  a_ = a_kept_;
  // resize() keeps the vectors' memory: a reused object does not allocate
  // (and fault in) three frame-sized buffers per frame, nor zero them: a row
  // never added is skipped where it would be read (added_, products_).
  const auto nx = static_cast<std::size_t>(nx_);
  for (std::size_t axis = 0; axis < 2; ++axis) {
    hs_[axis].resize(nx * static_cast<std::size_t>(height_));
    jf_[axis].resize(nx * static_cast<std::size_t>(ny_));
    jg_[axis].resize(nx * static_cast<std::size_t>(ny_));
  }
  added_.assign(static_cast<std::size_t>(height_), 0);
  products_.assign(static_cast<std::size_t>(ny_), 0);
}

void SignalLagSums::add_row(int y, const std::array<const float*, 2>& jf, const std::array<const float*, 2>& jg) {
  if (a_.empty() || y < 0 || y >= height_) return;
  const int r = static_cast<int>(a_.size() / 2);
  const auto nx = static_cast<std::size_t>(nx_);
  const bool on_grid = y % stride_ == 0;
  added_[static_cast<std::size_t>(y)] = 1;
  for (std::size_t axis = 0; axis < 2; ++axis) {
    float* hs = hs_[axis].data() + static_cast<std::size_t>(y) * nx;
    const float* in = jg[axis];
    // Every subgrid column at once by the vector kernel over the row's
    // stride phases (each column's sum over t in t order, FMA in
    // AVX2; the taps off the row add a·0).
    row_.resize(smooth_columns_strided_scratch(nx_, r, stride_));
    offsets_.resize(a_.size());
    smooth_columns_strided(in, width_, nx_, a_.data(), r, stride_, row_.data(), offsets_.data(), hs);
    if (!on_grid) continue;
    float* jfs = jf_[axis].data() + static_cast<std::size_t>(y / stride_) * nx;
    float* jgs = jg_[axis].data() + static_cast<std::size_t>(y / stride_) * nx;
    const float *jfa = jf[axis], *jga = jg[axis];
    const auto step = static_cast<std::size_t>(stride_);
    for (std::size_t X2 = 0; X2 < nx; ++X2) jfs[X2] = jfa[X2 * step], jgs[X2] = jga[X2 * step];
    unsigned char any = 0;
    for (std::size_t X2 = 0; X2 < nx; ++X2) any |= jfs[X2] != 0.0f ? 1 : 0;
    products_[static_cast<std::size_t>(y / stride_)] |= any;
  }
}

std::array<double, 2> SignalLagSums::factor() const {
  std::array<double, 2> out{1.0, 1.0};
  if (a_.empty()) return out;
  const int r = static_cast<int>(a_.size() / 2);
  const auto nx = static_cast<std::size_t>(nx_);
  for (std::size_t axis = 0; axis < 2; ++axis) {
    double lagged = 0, power = 0;
    std::vector<float> s(nx);
    for (int Y = 0; Y < ny_; ++Y) {
      const int y = Y * stride_;
      // A row never added, or added without products (the information
      // pass's band margins): jf is 0 there.
      if (y % row_step_ != 0 || !products_[static_cast<std::size_t>(Y)]) continue;
      int lo = std::max(-r, -y);
      const int hi = std::min(r, height_ - 1 - y);
      while (lo % row_step_ != 0) ++lo;  // (y + t) on the added rows only
      // The column sums of a whole subgrid row at once, t outermost: each
      // column's sum takes its terms in t order, as one column at a time would.
      std::fill(s.begin(), s.end(), 0.0f);
      for (int t = lo; t <= hi; t += row_step_) {
        if (!added_[static_cast<std::size_t>(y) + static_cast<std::size_t>(t)])
          continue;  // a zero row: at 0 adds nothing
        const float at = a_[static_cast<std::size_t>(t) + static_cast<std::size_t>(r)];
        const float* row = hs_[axis].data() + (static_cast<std::size_t>(y) + static_cast<std::size_t>(t)) * nx;
        add_scaled(s.data(), row, at, static_cast<int>(nx));
      }
      // Outside the overlap f is 0: no term. In float along the row, double over rows.
      float fs = 0, fg = 0;
      lag_factor_row(static_cast<int>(nx), jf_[axis].data() + static_cast<std::size_t>(Y) * nx, s.data(),
                     jg_[axis].data() + static_cast<std::size_t>(Y) * nx, fs, fg);
      lagged += fs, power += fg;
    }
    // Too little signal for the ratio to mean anything: leave the smooth-signal model.
    lagged *= row_step_;  // the odd taps the even ones stand for
    if (power > 0 && std::isfinite(lagged)) out[axis] = std::clamp(lagged / power, 0.0, 1.0);
  }
  return out;
}

std::array<double, 2> signal_lag_factor(const std::array<std::vector<float>, 2>& jf,
                                        const std::array<std::vector<float>, 2>& jg, int width, int height,
                                        double prefilter_sigma, int stride) {
  SignalLagSums sums(width, height, prefilter_sigma, stride);
  const auto w = static_cast<std::size_t>(std::max(0, width));
  for (int y = 0; y < height; ++y) {
    const std::size_t at = static_cast<std::size_t>(y) * w;
    sums.add_row(y, {jf[0].data() + at, jf[1].data() + at}, {jg[0].data() + at, jg[1].data() + at});
  }
  return sums.factor();
}

}  // namespace driftscan
