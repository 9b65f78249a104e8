#pragma once
// The specimen's drift as a continuous function of acquisition time,
// d(t) = (dx(t), dy(t)), in pixels, continuous (C2) across frame boundaries.
//
// d(t) is a uniform cubic B-spline in time, fitted by weighted least squares
// to drift samples (t, dx, dy, weight) - bands of scan lines registered
// against an average, or one rigid shift per frame at its mid time - with a
// penalty on the second differences of the spline coefficients (its
// curvature). The penalty is what keeps a sample of low weight from bending
// the path: only a consistent run of confident samples can. Its null space is
// a straight line, so a constant drift velocity is fitted without bias, and
// knot intervals without samples are bridged smoothly.
//
// The fit is deterministic: samples are sorted before they are accumulated,
// so every rank of a distributed run gets bit-identical coefficients from the
// same samples in any order.
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

#include "driftscan/core/transform.hpp"

namespace driftscan {

struct DriftSample {
  double t = 0.0;   // seconds (the clock of ScanTiming)
  double dx = 0.0;  // pixels
  double dy = 0.0;
  double weight = 1.0;  // confidence, >= 0 (inverse variance, or any relative scale)
};

struct DriftPathSettings {
  double knot_spacing = 0.0;  // seconds; > 0
  // Curvature penalty relative to the data: the penalty on the squared second
  // difference of the coefficients is smoothing x (sum of weights / number of
  // coefficients), so the same value means the same stiffness whatever the
  // weights' scale or the number of samples per knot. It acts on the
  // coefficients, so it is relative to the knot spacing. With about two
  // samples per knot interval (choose_knot_spacing), as measured in the unit
  // tests: 1 more than halves the error of samples with 0.1 px noise on a
  // gentle path (0.8 px wobble over 3.7 frames), but bends a stronger one
  // (1.5 px over 3 frames) by 0.1 px RMS, where 0.1 bends it by 0.015 px and
  // 0.01 by 0.004 px; scan-distortion estimation chooses it per axis by
  // cross_validated_smoothing unless the job sets one.
  double smoothing = 1.0;
  // y's own penalty when > 0 (else `smoothing`): the two axes of a scan see
  // different noise — the fast axis's samples carry the lines' jitter.
  double smoothing_y = 0.0;
};

// Each axis's smoothing chosen from the samples: of the candidates, the one
// whose fit through every other sample (in time order) best predicts the
// samples left out, and the reverse (two-fold cross-validation, the
// prediction error weighted). Noise that is independent from sample to sample
// (band registration noise, the lines' jitter averaged over a band) is then
// smoothed away as far as the path's own wiggles allow. Deterministic: the
// folds follow the sorted samples, not the caller's order.
DriftPathSettings cross_validated_smoothing(const std::vector<DriftSample>& samples, double t_begin, double t_end,
                                            double knot_spacing, const std::vector<double>& candidates);

// A knot spacing for a given number of drift samples per frame: about two
// samples per knot interval (fewer leave the spline to the penalty, more
// waste resolution), never more than one frame time nor less than 1/32 of it.
double choose_knot_spacing(double frame_time, double samples_per_frame);

class DriftPath {
 public:
  DriftPath() = default;  // d(t) = 0 everywhere

  // Fits the spline on [t_begin, t_end] with uniform knots at most
  // settings.knot_spacing apart (the spacing is shrunk so that a whole number
  // of intervals ends exactly at t_end). Samples outside the
  // interval or of zero weight are ignored. Throws a bad_input Error (one
  // line, naming the setting) when the settings are invalid or the samples
  // cannot determine a path (fewer than two distinct times with weight).
  static DriftPath fit(std::vector<DriftSample> samples, double t_begin, double t_end,
                       const DriftPathSettings& settings);

  // d(t). Outside [t_begin, t_end] the path continues as a straight line
  // (value and velocity of the end), not as the end segment's cubic, which
  // would run away.
  Point at(double t) const;
  Point velocity(double t) const;  // d'(t), pixels per second

  // The same path moved by a constant (the B-splines sum to one, so adding
  // it to every coefficient adds it everywhere): how a path is put in
  // another gauge, e.g. d = 0 at the start of frame 0.
  DriftPath shifted(Point offset) const;
  // The same path with each axis multiplied by a factor (the spline is linear
  // in its coefficients): a path fitted on frames binned along one axis, in
  // the unbinned frames' pixels.
  DriftPath scaled(Point factor) const;

  double t_begin() const { return t_begin_; }
  double t_end() const { return t_end_; }
  std::size_t coefficient_count() const { return cx_.size(); }
  double knot_spacing() const { return h_; }

 private:
  // Segment index and position within it for a time inside the interval.
  void locate(double t, std::size_t& segment, double& u) const;
  Point evaluate(std::size_t segment, double u) const;
  Point derivative(std::size_t segment, double u) const;

  double t_begin_ = 0.0, t_end_ = 0.0, h_ = 1.0;
  std::size_t segments_ = 0;
  std::vector<double> cx_, cy_;  // segments_ + 3 coefficients each
};

// The standard error of a fitted path, per axis, relative to the path's mean
// over a set of times (lines.csv's rows: the series' common offset, which
// the gauge d(0) = 0 leaves to the template), and of that mean itself. From
// the fit's normal equations M = A^T W A + lambda P: Cov(c) = s^2 M^-1, the
// penalised fit's Bayesian covariance (Wahba), which holds the smoothing's
// bias on average over the path as well as the samples' noise; s^2, the
// weights' scale, from the weighted residuals over the residual degrees of
// freedom (n - trace(M^-1 A^T W A)). Plus the drift no band sample resolves
// (a drift that wanders between and within bands), which is in a line's
// error but not in the fit's covariance: the residuals' variance at the mean
// weight less their white part (each band's own noise and lines' jitter,
// which reach a line only through the fit; white_sample_noise). With the
// whole residual variance the sigma was conservative, without it too small
// (bench_scan_distortion's single-direction cases: path z-RMS 0.70-0.94 and
// 1.46-2.16; now 0.90-1.20). The band of M^-1 by the Takahashi recursion:
// O(coefficients), so any series length.
class DriftPathUncertainty {
 public:
  DriftPathUncertainty() = default;  // no path: sigma 0
  // The same samples, interval and settings DriftPath::fit was given (the
  // fit is repeated); gauge_time(i), i < gauge_count: the times whose mean
  // path is the offset (every line of a series: not held).
  // fast_axis(t), when given (frames scanned in several directions): the
  // fast axis of the frame scanned at t; the samples' white part is then
  // estimated along each frame's fast and slow axes (the lines' jitter is
  // along the fast one) and turned into x and y sample by sample, instead of
  // pooling along x and y frames whose noise lies along different axes; and
  // the fit's covariance is the sandwich M^-1 (A^T W V A + s^2 lambda P) M^-1
  // with each sample's variance V along x and y from its frame's fast- and
  // slow-axis noise (measured from the residuals), not s^2 M^-1; and the
  // unresolved drift is one figure for x and y, read mostly from the
  // residuals along each frame's slow axis (the fast axis's hold the
  // jitter and noise correlated from band to band, which is not drift).
  // two_frames_fast: two frames followed in one direction, each the other's
  // template: their fast axis (unit; {} otherwise). The path's sigma then
  // holds what the two frames share, which no residual shows.
  static DriftPathUncertainty of(const std::vector<DriftSample>& samples, double t_begin, double t_end,
                                 const DriftPathSettings& settings, std::size_t gauge_count,
                                 const std::function<double(std::size_t)>& gauge_time,
                                 const std::function<Point(double)>& fast_axis = {}, Point two_frames_fast = {});
  // Of d(t) - mean over the gauge times of d.
  Point sigma(double t) const;
  // Of that mean (the common offset) itself.
  Point offset_sigma() const { return offset_; }
  // The weights' scale found (x, y): 1 when they were inverse variances in px^-2.
  Point scale() const { return scale_; }
  // The unresolved drift's sd (x, y): the part of sigma() the fit's
  // covariance does not hold (sigma^2 = fit's^2 + this^2).
  Point residual_sigma() const { return {std::sqrt(axis_[0].nugget), std::sqrt(axis_[1].nugget)}; }
  bool empty() const { return axis_[0].z.empty(); }

 private:
  struct Axis {
    std::vector<std::array<double, 4>> z;  // z[i][k] = (M^-1)(i, i + k) x s^2
    std::vector<double> q;                 // s^2 M^-1 b, b the gauge's mean basis vector
    double c0 = 0.0;                       // s^2 b^T M^-1 b
    double nugget = 0.0;                   // the unresolved drift's variance
  };
  double t_begin_ = 0.0, h_ = 1.0;
  std::size_t segments_ = 0;
  std::array<Axis, 2> axis_;
  Point offset_, scale_;
};

}  // namespace driftscan
