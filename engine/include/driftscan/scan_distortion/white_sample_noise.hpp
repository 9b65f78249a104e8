#pragma once
// The white part of the drift samples' scatter: what differs from band to
// band independently (each band's registration noise, the mean of its lines'
// jitter), as opposed to drift the path does not resolve, which is correlated
// from one band to the next. The path's standard error needs the two apart:
// the unresolved drift is in every line's error, the white part only through
// the fit.
#include <cstddef>
#include <functional>
#include <vector>

#include "driftscan/scan_distortion/drift_path.hpp"

namespace driftscan {

struct WhiteSampleNoise {
  double scale = 0.0;       // omega: sample i's white variance is omega / weight_i (px^2 x weight)
  std::size_t triples = 0;  // second differences used; 0: no estimate (scale 0)
  double walk = 0.0;        // beta: the random walk's variance per sample spacing (px^2), clamped at 0
};

// From the second differences d_m = y(i - m) - 2 y(i) + y(i + m) at lags
// m = 1..3 within runs of evenly spaced samples (one frame's bands), axis 0
// (dx) or 1 (dy): E[d_m^2] = omega (1/w(i-m) + 4/w(i) + 1/w(i+m))
// + beta (2m - 1) + gamma m^4: a random walk's share for samples that are
// means over their spacing (bands tiling a frame: D dt (2m - 1), the
// averaging's -D dt taken out, or it would read as negative noise) and a
// smooth path's curvature as the lag's fourth power; least squares over the
// triples. Needs min_per_lag triples at each lag; omega clamped at 0.
WhiteSampleNoise white_sample_noise(const std::vector<DriftSample>& samples, int axis, std::size_t min_per_lag = 8);

// The same along a direction of each sample's own (`along`: a unit vector;
// y = (dx, dy) . along): frames scanned in several directions have their
// fast axis's noise (the lines' jitter) along a different specimen axis each.
WhiteSampleNoise white_sample_noise(const std::vector<DriftSample>& samples,
                                    const std::function<Point(const DriftSample&)>& along, std::size_t min_per_lag = 8);

}  // namespace driftscan
