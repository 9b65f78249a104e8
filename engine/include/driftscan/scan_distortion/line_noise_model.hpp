#pragma once
// The pixel noise the line fits weigh by (scan_distortion.cpp): its variance
// as a function of the template's value v, a + b v (shot noise grows with
// the signal, a detector's read noise does not), fitted per frame to its
// bands' squared residuals, with a floor no pixel's variance is taken below.
// Weights 1 / variance make the line fits nearly the efficient estimate
// under shot noise and leave them plain least squares where the noise does
// not depend on the signal. Measured with the true model and the average as
// template on bench_scan_distortion's first case (shot noise): a line's
// offset error 0.139 -> 0.124 px, and its predicted precision 0.090 (too
// optimistic: unweighted, the bright pixels' larger noise was not in it)
// -> 0.125 px.
//
// The floor is where the template's structure starts (IntensityBins): shot
// noise makes a dark pixel the more informative, but only where the template
// shows the specimen's gradient there. On content whose structure is dark
// (annular bright field: dark columns on a bright background) the dark
// pixels carry the gradients; on a lattice imaged bright on a dark
// background most dark pixels are flat, and weighing them up only weighs
// the template's errors (its noise, its filter's ringing) up.
#include <algorithm>

namespace driftscan {

// A frame's template samples by brightness: per bin of the template's value
// v (an eighth of the template's level wide, the last open-ended), the
// pixels, their v and their squared template gradient along the frame's
// fast axis.
struct IntensityBins {
  static constexpr int kBins = 16;
  // `level`: the template's mean value (no bins, all in the last, if <= 0).
  explicit IntensityBins(double level) : per_unit(level > 0 ? 8.0 / level : 0.0) {}
  double per_unit;  // bins per unit of v
  double count[kBins] = {}, value[kBins] = {}, gradient2[kBins] = {};
  void add(double v, double gradient) {
    const int bin = per_unit > 0 ? std::min(kBins - 1, static_cast<int>(std::max(0.0, v) * per_unit)) : kBins - 1;
    count[bin] += 1.0, value[bin] += v, gradient2[bin] += gradient * gradient;
  }
};

struct LineNoiseModel {
  double a = 1.0, b = 0.0, floor = 1.0;
  // From sums over a frame's pixels of 1, v, v^2, r^2 and v r^2 (r the
  // residual against the template) and, when given, the frame's template
  // samples by brightness. The floor: the variance at the darkest
  // brightness where the template still shows the content's structure (the
  // first bin of enough pixels, 200 and 0.5% of them, whose mean squared
  // gradient is at least half the frame's), within [a tenth of, all of] the
  // mean squared residual; without bins (or without such a bin), the mean
  // squared residual: no pixel weighs more than the frame's mean noise would.
  static LineNoiseModel fit(const double sums[5], const IntensityBins* bins = nullptr);
  double weight(double v) const { return 1.0 / std::max(floor, a + b * v); }
};

}  // namespace driftscan
