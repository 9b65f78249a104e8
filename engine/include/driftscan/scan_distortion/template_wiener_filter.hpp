#pragma once
// A Wiener filter for the template the scan-distortion fits match against.
//
// The template is an average of the other frames, so it carries their noise;
// the fits take its gradient, and the gradient of that noise scatters every
// line's jitter estimate (measured with the true model and the true-model
// average as template: 0.142 px of error where the fits' own precision
// predicts 0.090). The noise is measured, not assumed: the average of the
// even frames minus that of the odd ones cancels the specimen and keeps the
// noise (and the frames' misplacements), with its spectrum. The filter keeps
// each spatial frequency in proportion to how much of the average's power
// there is specimen:
//     gain(f) = max(0, P(f) - N(f)) / P(f),
// P the average's power and N the noise's, both smoothed over neighbouring
// frequencies. A lattice keeps its reflections and loses the noise between
// them; broadband content keeps what stands above the noise.
//
//   TemplateWienerFilter filter(average, half_difference, even, odd);
//   filter.apply(image);  // any image of the average's size; thread-safe
#include <cstddef>
#include <vector>

#include "driftscan/core/fftw_planner.hpp"
#include "driftscan/core/frame.hpp"

namespace driftscan {

class TemplateWienerFilter {
 public:
  // `average`: the average of `even` + `odd` frames; `half_difference`: the
  // average of the even frames minus that of the odd ones, 0 where either
  // half is missing (same size). Throws a driftscan::Error (failure) on sizes that
  // differ or no frames in a half.
  // `noise_scale` (> 0) multiplies the noise power in the gain: 1 is the
  // Wiener filter, less keeps more of the average.
  TemplateWienerFilter(const Frame& average, const Frame& half_difference, std::size_t even, std::size_t odd,
                       double noise_scale = 1.0);

  // Filters `image` (the average's size) in place: its mean is kept.
  void apply(Frame& image) const;
  // `difference` := base + the cubic B-spline coefficients of the filtered
  // `difference` (all three the average's size), the prefilter applied in
  // the spectrum with the transform's periodic (blended) boundaries: a
  // leave-one-out template's coefficients as the whole average's plus those
  // of its (small) difference from it, one transform pair and no separate
  // prefilter. Near the image's edges the periodic prefilter differs from
  // bspline_prefilter's mirrored one (within ~10 px, decaying by 0.27 a px).
  void add_filtered_coefficients(Frame& difference, const Frame& base) const;
  // The gain at spectrum index (u, v) of the r2c layout of the padded size
  // (transform_width() x transform_height(); u <= transform_width()/2).
  float gain(int u, int v) const { return gain_[static_cast<std::size_t>(v) * spectrum_width_ + u]; }
  // The fraction of the average's power (mean removed) the filter keeps.
  double kept_power() const { return kept_power_; }
  int transform_width() const { return fft_.width(); }
  int transform_height() const { return fft_.height(); }

 private:
  void check_size(const Frame& image) const;
  void blend_padding(FftBuffer<float>& real) const;
  RealFft2d<float> fft_;  // of a size FFTW is fast on, the image zero-padded
  int width_ = 0, height_ = 0;
  int spectrum_width_ = 0;
  std::vector<float> gain_;
  double kept_power_ = 1.0;
};

}  // namespace driftscan
