#pragma once
// The standard error of one pixel of an average, from per-pixel sums of the
// samples that made it (sigma.tif). The samples are the warped frames at
// that pixel: their spread holds the noise as interpolated at each frame's
// own sub-pixel phase, the frames' misplacements and whatever else differs
// from frame to frame, which is what an independent set of frames would
// average differently. The frames are independent draws; neighbouring
// pixels' errors are correlated (the interpolation), each pixel's is not
// changed by that. NaN where fewer than 2 samples (no spread to measure).
#include <algorithm>
#include <cmath>
#include <limits>

namespace driftscan {

// Of the mean of n samples with sum s and sum of squares s2:
// sqrt(unbiased variance / n).
inline double mean_standard_error(double s, double s2, double n) {
  if (!(n >= 1.5)) return std::numeric_limits<double>::quiet_NaN();
  const double var = std::max(0.0, (s2 - s * s / n) / (n - 1.0));
  return std::sqrt(var / n);
}

// Of the weighted mean sum(w v) / sum(w): sw = sum w, sw2 = sum w^2,
// swv = sum w v, swv2 = sum w v^2. The samples' variance (taken equal: the
// weights come from the drift, not the pixel noise) from the weighted spread
// with the reliability-weight correction, times sum(w^2) / sum(w)^2. Equal
// weights give mean_standard_error.
inline double weighted_standard_error(double sw, double sw2, double swv, double swv2) {
  if (!(sw > 0) || !(sw2 > 0)) return std::numeric_limits<double>::quiet_NaN();
  const double dof = sw - sw2 / sw;  // sw (1 - 1/n_eff)
  if (!(dof > 1e-9 * sw)) return std::numeric_limits<double>::quiet_NaN();
  const double var = std::max(0.0, (swv2 - swv * swv / sw) / dof);
  return std::sqrt(var * sw2) / sw;
}

// Of the clipped mean t of the `kept` samples out of n whose mean is m and
// whose mean's standard error is `se` (mean_standard_error of all n): every
// sample's spread about t, the clipped ones included, over kept (kept - 1).
// The limits are drawn from the same samples, so what they drop moves with
// the noise: the kept samples' spread alone misses it (odd/even split at
// dose 2: z-RMS 1.27), the plain mean's se by less (1.12; 1.10 with this).
// Equal to se when nothing was clipped.
inline double clipped_standard_error(double se, double n, double m, double t, double kept) {
  if (!(kept >= 1.5) || !std::isfinite(se)) return std::numeric_limits<double>::quiet_NaN();
  const double about_t = se * se * n * (n - 1.0) + n * (m - t) * (m - t);  // sum (x - t)^2 over all n
  return std::sqrt(about_t / (kept * (kept - 1.0)));
}

// Of the median of n samples of a normal distribution: sqrt(pi/2) times the
// mean's (large n). Not calibrated for low counts, where the median of
// integer-valued samples moves in steps.
inline double median_standard_error(double s, double s2, double n) {
  return 1.2533141373155003 * mean_standard_error(s, s2, n);
}

}  // namespace driftscan
