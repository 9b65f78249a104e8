#pragma once
// Registration of a pair of frames by cross-correlation in Fourier space: the
// unambiguous first guess of the scan (consecutive frames move by much less
// than a lattice period) and the element e_k = (k-1 -> k, T_{k-1,k}).
//
// Both frames (or the same ROI of both) have their mean removed and are
// apodised (Hann or Tukey window, so the frame edges do not correlate), are
// transformed with FFTW (r2c, plans cached per size), multiplied, optionally
// band-passed, and transformed back. The integer peak is searched within the
// max-shift bound; the subpixel position is the maximum of the correlation
// interpolated exactly from the cross-power spectrum (the peak an upsampled
// DFT converges to, Guizar-Sicairos, Thurman & Fienup, Opt. Lett. 33, 156
// (2008)), found by Newton steps whose gradient and Hessian are DFT sums, so
// no surface is upsampled and no peak shape is fitted (no pixel locking).
//
// Plan/execute: make one PairRegistrationPlan per frame size; execute() is
// const and thread-safe (scratch buffers are per call).
#include <cstddef>
#include <memory>

#include "driftscan/core/frame.hpp"
#include "driftscan/core/transform.hpp"
#include "driftscan/registration/registration_settings.hpp"

namespace driftscan {

enum class Apodisation { none, hann, tukey };

struct PairRegistrationOptions {
  Apodisation window = Apodisation::tukey;
  double tukey_alpha = 0.5;    // fraction of each axis inside the cosine taper
  double bandpass_low = 0.0;   // keep spatial periods >= low px (0: off)
  double bandpass_high = 0.0;  // ... and <= high px (0: off)
  double whitening = 0.0;      // 0: cross-correlation, 1: phase correlation (|X|^-w weighting)
  double smooth_sigma = 0.0;   // Gaussian smoothing of both frames, px, as a spectral weight (0: none)
  double max_shift = 0.0;      // bound on |dx|, |dy| in px (0: up to a quarter of the size)
  bool dft_subpixel = true;    // false: parabola through the integer neighbours only
  // Periodic frames: search only within half the shortest lattice vector
  // found in the reference's autocorrelation (consecutive frames move less
  // than that, and beyond it a lattice period away looks just as good).
  bool lattice_bound = true;
  // The shortest lattice vector when already known (px; 0: find it in each
  // reference frame, which costs one more inverse FFT per pair).
  double lattice_vector = 0.0;
  // Area (px) of one independent sample of the series' frames as this plan
  // sees them (smoothed, windowed): the central lobe of frame 0's
  // autocorrelation, PairShift::lobe_area of execute(f0, f0). It sets the
  // null of PairShift::significance; 0: the pair's own peak lobe.
  double sample_area = 0.0;
  Roi roi;  // region of both frames used (whole frame when empty)

  static PairRegistrationOptions from(const RegistrationSettings& settings);
};

struct PairShift {
  // T_{i,k} as a translation: f_k(p) ~ f_i(p + (dx, dy)).
  double dx = 0.0, dy = 0.0;
  // Peak-to-sidelobe ratio: (peak - mean) / std of the correlation outside
  // a small zone around the peak. Noise-only pairs give ~ 4-6.
  double psr = 0.0;
  // Highest other local maximum (beyond 2 px of the peak) relative to the
  // peak, both above the correlation mean: near 1 means an ambiguous match
  // (e.g. a lattice period away).
  double second_peak = 0.0;
  bool at_bound = false;        // the peak sits on the max-shift or lattice bound (likely wrong)
  double lattice_vector = 0.0;  // shortest lattice vector of the reference (px), 0: not periodic
  // The peak as a correlation coefficient of the two prepared (windowed,
  // smoothed) frames, and how far it stands above what frames sharing no
  // content give: Fisher's atanh(ncc) sqrt(n - 3), n = window samples /
  // sample_area the independent samples (Bartlett: the sum of the product of
  // their autocorrelations, here the central lobe of frame 0's; a lattice's
  // periodic lobes are the shared content under test, not noise); for large
  // n and small ncc that is ncc sqrt(n). Compare with significance_threshold().
  double ncc = 0.0;
  double significance = 0.0;
  bool significant = true;  // significance >= the threshold for the shifts searched
  // The central lobe of this surface around its peak, sum of (c/c_peak)^2
  // over the connected half-maximum region x 4/3 (the Gaussian lobe's
  // total): for f_i = f_k, the area of one independent sample.
  double lobe_area = 0.0;

  Transform transform() const { return Transform::translation(dx, dy); }
};

// Which frame of which series a frame passed to execute() is: the moving
// frame's spectrum of one call serves as the reference's in the next call
// on the same thread (element k-1 -> k, then k -> k+1), one forward FFT of
// three saved. The same prepare() and plan on the same pixels: the same bits.
struct PairFrameKey {
  const void* series = nullptr;  // nullptr: unknown, never reused
  std::size_t index = 0;
};

class PairRegistrationPlan {
 public:
  // Throws bad_input when the ROI does not fit in a width x height frame or is too small.
  PairRegistrationPlan(int width, int height, const PairRegistrationOptions& options = {});

  // f_i reference, f_k moving; both width x height. Throws bad_input for a
  // frame of the wrong size, with non-finite pixels or no contrast.
  PairShift execute(const Frame& fi, const Frame& fk) const;
  // The same, reusing this thread's last moving spectrum when it is ki's.
  PairShift execute(const Frame& fi, const Frame& fk, PairFrameKey ki, PairFrameKey kk) const;
  // The same with the peak searched about `predicted` (px) instead of about
  // no shift: on a periodic frame, within half the shortest lattice vector of
  // it (so a step that drift took past half a period is found when it is
  // predicted within half a period); else within the max-shift bound as
  // execute(). at_bound is measured from the prediction. A prediction whose
  // circle lies outside the max-shift bound gives an insignificant shift.
  PairShift execute_about(const Frame& fi, const Frame& fk, Point predicted) const;

  int width() const { return width_; }
  int height() const { return height_; }
  const PairRegistrationOptions& options() const { return options_; }
  // The significance below which a peak is indistinguishable from the
  // highest of `samples` independent standard normals (what frames sharing
  // no content give over that many independent shifts): their expected
  // maximum sqrt(2 ln M) plus a margin for a false alarm rate ~1e-4 (Gumbel
  // tail: 9.2 / sqrt(2 ln M)). A pair searches M = searched area / sample area.
  static double significance_threshold(double samples);
  // A correlation coefficient over `samples` independent samples as that
  // standard normal: Fisher's atanh(ncc) sqrt(samples - 3) (0 below 3 samples).
  static double correlation_significance(double ncc, double samples);
  // Frees the calling thread's transform buffers, which every plan's calls
  // on that thread share and keep between calls (a 4096² pair's are ~335 MB;
  // a pool thread's would otherwise live as long as the process). The
  // thread's next call allocates them again.
  static void release_thread_buffers();

  struct State;

 private:
  PairShift search(const Frame& fi, const Frame& fk, const Point* about, const PairFrameKey* keys) const;

  int width_, height_;
  PairRegistrationOptions options_;
  std::shared_ptr<const State> state_;
};

}  // namespace driftscan
