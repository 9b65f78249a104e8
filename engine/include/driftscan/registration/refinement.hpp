#pragma once
// Iterative intensity-based registration of frame k against frame i from an
// initial guess: the `refine` of the scan operator (docs/method.md).
//
// Minimises the sum of squared differences between f_i(q) and
// alpha * f_k(S(q)) + beta over the overlap (q in the reference's ROI and
// mask, S = T_{i,k}^{-1}), with gain alpha and offset beta re-fitted every
// iteration — at the optimum this is maximising the NCC, so dose changes
// between frames do not bias it. Gauss-Newton in the inverse-compositional
// form (Baker & Matthews 2004: the Hessian is built from the reference's
// gradients once per level), with Levenberg-Marquardt damping when a step
// raises the cost; cubic B-spline interpolation of the moving frame
// (cubic_bspline.hpp: Keys' kernel would bias lattice shifts by ~0.01 px); a
// coarse-to-fine pyramid whose coarsest level is chosen from how far the
// initial guess may be off; stops when an update moves no pixel of the ROI
// by more than `tolerance`, so the number of iterations depends on the data.
//
// Both frames are smoothed by a small Gaussian first: on shot-noise-limited
// frames this removes the noise bands that carry no lattice signal (and the
// pixel-locking bias interpolated white noise would otherwise cause).
//
// Plan/execute: a Refinement is made once per frame size and settings;
// prepare() builds a frame's pyramid (reusable: the scan refines many frames
// against frame 0); execute() is const and thread-safe.
#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "driftscan/core/frame.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/registration/registration_settings.hpp"

namespace driftscan {

struct RefineOptions {
  MotionModel model = MotionModel::translation;
  Roi roi;                            // in the reference frame's pixels; whole frame when empty
  std::shared_ptr<const Frame> mask;  // reference-frame sized, non-zero = use; null for none
  int pyramid_levels = 3;             // most levels ever used (level L is 2^L times coarser)
  int max_iterations = 100;           // per level
  double tolerance = 1e-3;            // px of the full-resolution frame
  double prefilter_sigma = 1.0;       // Gaussian smoothing before registration, px (0: none)
  int min_level_size = 24;            // never use a level smaller than this, px
  // Share of the overlap's rows the uncertainty (information()) measures, in
  // thin bands, on overlaps of 1024 rows or more (smaller overlaps: every
  // row; 1: every row always). Its σ is then the whole overlap's estimated
  // from a sample: within ~4% of every row's on lattice and scanned series
  // from 1024² to 4096², at ~45% of the pass's cost (README, "Drift
  // uncertainty").
  double information_rows = 0.15;
  // OpenMP threads inside one execute()/prepare() (results do not depend on
  // it). Leave 1 when callers already run in parallel, or when the cores are
  // shared: an execute() opens several short parallel regions per millisecond.
  int threads = 1;

  static RefineOptions from(const RegistrationSettings& settings);
};

struct RefineResult {
  Transform transform;     // T_{i,k}: f_k(p) ~ f_i(T(p))
  int iterations = 0;      // sampling passes over the overlap, all levels
  int start_level = 0;     // coarsest pyramid level used
  double cost = 1.0;       // 1 - NCC^2 over the overlap at the result (0 = perfect)
  double ncc = 0.0;        // normalised cross-correlation there
  std::size_t pixels = 0;  // overlap pixels used at full resolution
  bool converged = false;  // false: max_iterations reached at the finest level
};

// How precisely a registration is determined by the data: the Fisher
// information of the refinement's final Gauss-Newton level at its result,
// H^-1 M H^-1 with H the normal matrix and M the noise estimated from the
// residual (refinement.cpp: noise_information). It includes the noise of
// both frames.
struct RefineInformation {
  std::array<double, 36> covariance{};  // of T's entries (a, b, c, d, tx, ty), row-major 6x6
  // Per axis (x, y), the share of the reference gradient's power that is
  // signal (1 - the share of its noise): where it is small, much of the
  // variance is the reference's gradient noise times the moving frame's noise,
  // new in every frame (drift_uncertainty.cpp: common_fraction).
  std::array<double, 2> gradient_signal_fraction{1.0, 1.0};
  // Per axis, the share of the prefiltered noise's correlation the signal's
  // gradient sees (signal_lag_factor.hpp): 1 for a signal smooth at the
  // prefilter's scale, less for a lattice a few prefilter widths apart.
  std::array<double, 2> signal_lag_factor{1.0, 1.0};
  double prefilter_sigma = 0.0;    // of the Gaussian the frames were smoothed with (px; 0: none)
  bool singular = false;           // information not invertible: variances are inf
  double residual_rms = 0.0;       // of alpha g + beta - f over the overlap
  double reference_mean = 0.0;     // mean of the (smoothed) reference over the overlap
  double alpha = 1.0, beta = 0.0;  // gain and offset fitted there
  // The gain the noise's lag sum took its residual at: alpha, or for counts
  // the true gain (mean f / mean g; the fitted alpha is attenuated by noise).
  double noise_gain = 1.0;
  std::size_t pixels = 0;  // overlap pixels used
};

class Refinement {
 public:
  // A frame ready to register: prefiltered pyramid (and, for a reference, gradients).
  struct Prepared;

  // Throws bad_input when the ROI lies outside a width x height frame, is
  // too small, or the mask has the wrong size.
  Refinement(int width, int height, const RefineOptions& options);

  // Throws bad_input when the frame has the wrong size or non-finite pixels.
  // A reference needs gradients; a moving frame only needs the levels that
  // will be used (levels <= 0: all of them).
  std::shared_ptr<const Prepared> prepare(const Frame& f, bool as_reference = true, int levels = 0) const;
  // The number of pyramid levels execute() uses for this initial uncertainty.
  int levels_for(double init_uncertainty) const;

  // init_uncertainty: how far (px) the initial guess may be from the answer;
  // it selects the coarsest level (about log2 of it). Throws bad_input when
  // the frames do not overlap enough at the guess, or are blank there.
  RefineResult execute(const Prepared& reference, const Prepared& moving, const Transform& init,
                       double init_uncertainty = 1.0) const;
  RefineResult execute(const Frame& reference, const Frame& moving, const Transform& init,
                       double init_uncertainty = 1.0) const;

  // The precision of T = T_{i,k} (a result of execute) from the full-resolution
  // level; never throws on data: blank frames or no overlap give `singular`.
  RefineInformation information(const Prepared& reference, const Prepared& moving, const Transform& T,
                                bool counts = false) const;

  int width() const { return width_; }
  int height() const { return height_; }
  const RefineOptions& options() const { return options_; }

 private:
  int width_, height_;
  RefineOptions options_;
  Roi roi_;  // resolved (never empty)
  int levels_ = 1;
  std::shared_ptr<const std::vector<Frame>> level_masks_;  // 0/1 per pyramid level, null for none
};

// Gaussian smoothing with edge clamping (separable); exposed for tests and
// for the averaging's quality figure.
Frame gaussian_smooth(const Frame& f, double sigma, int threads = 1);

}  // namespace driftscan
