#pragma once
// How much of the prefiltered noise's correlation the signal's gradient
// sees. The noise in a drift estimate that the signal's gradient carries is
// sum_q sum_d grad s(q) grad s(q + d) K(d) V: the noise correlation K of the
// prefilter (noise white before it) weighted by the signal gradient's own
// correlation. Only for a signal smooth over K's reach is that the gradient's
// power times sum_d K(d); a lattice whose period is a few prefilter widths
// sees a fraction of it (in Fourier: the mean of |g(k)|^2 over the signal
// gradient's spectrum). drift_uncertainty.cpp needs that fraction to split
// the variance into frame 0's part (the signal's) and each frame's own.
#include <array>
#include <cstddef>
#include <vector>

namespace driftscan {

// The sums of signal_lag_factor, streamed row by row: (a * jg) and jf are
// needed only on every `stride`-th row and column (the gradients are smooth
// at the prefilter's scale), so each row's jg is smoothed along x at those
// columns as it arrives and nothing frame-sized is kept (the refinement's
// information pass calls this once per frame).
class SignalLagSums {
 public:
  // row_step 2: only the even rows are added (the information pass's every
  // second row); the column smoothing then takes a's even taps, doubled (a
  // trapezoid rule: off by the aliased a^(1/2 - f) for a gradient of
  // frequency f along y, 0.012 at sigma 1 and a 6 px period).
  SignalLagSums(int width, int height, double prefilter_sigma, int stride = 1, int row_step = 1);
  // As a new object of these arguments, keeping the buffers' memory (the
  // information pass reuses one per thread instead of one per frame).
  void reset(int width, int height, double prefilter_sigma, int stride = 1, int row_step = 1);
  // Row y (in [0, height), any order, each at most once; rows never added
  // are 0): jf[axis], jg[axis] point to `width` values.
  void add_row(int y, const std::array<const float*, 2>& jf, const std::array<const float*, 2>& jg);
  // Per axis: sum jf (a * jg) / sum jf jg over the subgrid; see signal_lag_factor.
  std::array<double, 2> factor() const;

 private:
  // out[x] += a in[x] over n columns, by the vector kernel (factor's column sums).
  static void add_scaled(float* out, const float* in, float a, int n);

  int width_ = 0, height_ = 0, stride_ = 1, row_step_ = 1, nx_ = 0, ny_ = 0;
  std::vector<float> a_;       // a = g * g to ~3 of its sd, centred (empty: no prefilter)
  std::vector<float> a_kept_;  // a for a_sigma_ (reset() recomputes it only when sigma changes)
  double a_sigma_ = 0;
  std::array<std::vector<float>, 2> hs_;       // jg smoothed along x, subgrid columns x every row
  std::array<std::vector<float>, 2> jf_, jg_;  // on the subgrid
  std::vector<unsigned char> products_;        // per subgrid row: added, and some jf is not 0
  std::vector<unsigned char> added_;           // per row: add_row was called (else hs_'s row is stale, read as 0)
  std::vector<float> row_;                     // add_row's row split by stride phase (kept between rows)
  std::vector<int> offsets_;                   // add_row's taps' offsets into row_
};

// The subgrid step for a prefilter of `sigma` px: ~1.5 sigma (1 below 2/3 px).
int signal_lag_stride(double prefilter_sigma);

// Per axis: sum_q jf(q) (a * jg)(q) / sum_q jf(q) jg(q), a = g * g the
// prefiltered white noise's correlation (g: gaussian_smooth's kernel of
// `prefilter_sigma`, sum a = 1), q on every `stride`-th row and column. jf,
// jg: the reference's and the warped moving frame's gradient along that axis
// (weighted), width x height, 0 outside the overlap; their noises are
// independent, so the sums see the signal alone on average. In [0, 1]; 1
// without a prefilter or when the sums carry no signal.
std::array<double, 2> signal_lag_factor(const std::array<std::vector<float>, 2>& jf,
                                        const std::array<std::vector<float>, 2>& jg, int width, int height,
                                        double prefilter_sigma, int stride = 1);

// The 1-D autocorrelation of gaussian_smooth's normalised kernel of `sigma`
// px (index 0 at lag -(size / 2)); {1} for sigma <= 0.
std::vector<double> prefilter_autocorrelation(double sigma);

}  // namespace driftscan
