#include "driftscan/scan_distortion/scan_distortion.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <string>
#include <utility>

#include "driftscan/averaging/standard_error.hpp"
#include "driftscan/core/bspline_taps.hpp"
#include "driftscan/core/cubic_bspline.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/core/simd_level.hpp"
#include "driftscan/scan_distortion/fast_axis_binning.hpp"
#include "driftscan/scan_distortion/line_noise_model.hpp"

namespace driftscan {
namespace {

// The 4x4 spline taps of the fits and the sampling, in two builds: SSE2
// (every x86-64) and AVX2 + FMA (bspline_taps.hpp). The loops that take the
// second are compiled for that target (the *_avx2 wrappers below: flatten
// inlines what they call, the taps and the template's lookups included; a
// few library calls stay calls) and chosen per call by simd_level().
struct Sse2Taps {
  static void gradient(const float* p, std::size_t stride, float fx, float fy, float& v, float& gx, float& gy) {
    bspline_taps_gradient(p, stride, fx, fy, v, gx, gy);
  }
  static float value(const float* p, std::size_t stride, float fx, float fy) {
    return bspline_taps_value(p, stride, fx, fy);
  }
};
#if defined(DRIFTSCAN_FMA_TAPS)
struct FmaTaps {
  DRIFTSCAN_AVX2_TARGET static void gradient(const float* p, std::size_t stride, float fx, float fy, float& v,
                                             float& gx, float& gy) {
    bspline_taps_gradient_fma(p, stride, fx, fy, v, gx, gy);
  }
  DRIFTSCAN_AVX2_TARGET static float value(const float* p, std::size_t stride, float fx, float fy) {
    return bspline_taps_value_fma(p, stride, fx, fy);
  }
};
#else
using FmaTaps = Sse2Taps;
#endif

// The cubic B-spline of `coeffs` at (x, y) and its gradient; false when the
// 4x4 taps leave the image (no clamped edge values in a fit).
// Inlined into the fits' loops (called a few times a pixel per round; as a
// call, the compiler split off its body and passed every result through memory).
template <class Taps>
[[gnu::always_inline]] inline bool sample_with_gradient(const Frame& coeffs, double x, double y, double& v, double& gx,
                                                        double& gy) {
  if (!(x >= 1.0 && y >= 1.0)) return false;
  const int ix = static_cast<int>(x), iy = static_cast<int>(y);  // x, y >= 1: truncation is floor
  if (ix + 2 >= coeffs.width || iy + 2 >= coeffs.height) return false;
  float fv, fgx, fgy;
  Taps::gradient(coeffs.row(iy - 1) + ix - 1, static_cast<std::size_t>(coeffs.width), static_cast<float>(x - ix),
                 static_cast<float>(y - iy), fv, fgx, fgy);
  v = fv, gx = fgx, gy = fgy;
  return true;
}

// The average as a registration template: spline coefficients, and which
// specimen points are covered well enough to compare against.
struct Template {
  Frame coeffs;
  const SpecimenImage* image = nullptr;
  double min_coverage = 1.0;
  double line_min_coverage = 1.0;  // for the line fits (at_for_lines)
  // The average's mean value where min_coverage frames cover it: the scale
  // of the noise model's brightness bins (IntensityBins).
  double level = 0.0;

  // Value and gradient at specimen point q; false where the average is thin.
  template <class Taps = Sse2Taps>
  bool at(Point q, double& v, double& gx, double& gy) const {
    return at<Taps>(q, v, gx, gy, min_coverage);
  }
  // For the line fits, down to line_min_coverage, with a pixel's weight
  // `share`: (c / min_coverage)^2 where the template holds c < min_coverage
  // frames (its noise, 1 / c of a frame's, is no longer small there).
  // Measured on bench_scan_distortion against c / (c + 1) and c / m: the
  // fused averages and the jitter z-RMS least moved, the jitter errors as low.
  template <class Taps = Sse2Taps>
  bool at_for_lines(Point q, double& v, double& gx, double& gy, double& share) const {
    double c;
    if (!at<Taps>(q, v, gx, gy, line_min_coverage, &c)) return false;
    const double part = c / min_coverage;
    share = part >= 1.0 ? 1.0 : part * part;
    return true;
  }
  template <class Taps = Sse2Taps>
  bool at(Point q, double& v, double& gx, double& gy, double least, double* c = nullptr) const {
    const double x = q.x - image->origin.x, y = q.y - image->origin.y;
    // Nearest pixel for the coverage test; x, y >= -0.5 there, so truncation rounds.
    if (!(x >= -0.5 && y >= -0.5)) return false;
    const int nx = static_cast<int>(x + 0.5), ny = static_cast<int>(y + 0.5);  // NOLINT(bugprone-incorrect-roundings)
    if (nx >= image->coverage.width || ny >= image->coverage.height) return false;
    if (image->coverage.at(nx, ny) < least) return false;
    if (c) *c = image->coverage.at(nx, ny);
    return sample_with_gradient<Taps>(coeffs, x, y, v, gx, gy);
  }
  // The same wherever frames cover every tap of the cubic B-spline at q
  // (a tap on a pixel none covers holds the average's mean, and one frame
  // k alone covered still holds frame k's value in its leave-one-out
  // template: either would bend v), with the coverage c at q.
  template <class Taps = Sse2Taps>
  bool covered_at(Point q, double& v, double& gx, double& gy, double& c) const {
    const double x = q.x - image->origin.x, y = q.y - image->origin.y;
    if (!(x >= 1.0 && y >= 1.0)) return false;
    const int ix = static_cast<int>(x), iy = static_cast<int>(y);  // x, y >= 1: truncation is floor
    if (ix + 2 >= image->coverage.width || iy + 2 >= image->coverage.height) return false;
    for (int j = iy - 1; j <= iy + 2; ++j)
      for (int i = ix - 1; i <= ix + 2; ++i)
        if (image->coverage.at(i, j) < 1.0f) return false;
    c = image->coverage.at(x - ix < 0.5 ? ix : ix + 1, y - iy < 0.5 ? iy : iy + 1);
    return sample_with_gradient<Taps>(coeffs, x, y, v, gx, gy);
  }
};

// One band's registration against the template: the shift delta that makes
// band(p) ~ T(probed(p) + delta) + c, by Gauss-Newton from delta = 0.
struct BandFit {
  Point delta;
  double weight = 0.0;  // inverse variance of delta along its worst direction
  double residual_var = 0.0;
  // Whether the template explains part of the band: the residual's variance
  // below the band's own (a frame of noise alone leaves more than it had).
  bool explains = false;
  double t = 0.0;   // the band's mean acquisition time
  Point mean_path;  // mean of d(t) over the pixels used
  bool ok = false;
  // At the last step, sums for the noise's dependence on the intensity
  // (LineNoiseModel): count, v, v^2, r^2, v r^2 over the pixels used.
  double noise_sums[5] = {};
  // The last step's template value and gradient along the fast axis at each
  // pixel (NaN where the template is thin), evaluated with the band moved by
  // `evaluated_at`: the band's lines take their first jitter step from them
  // instead of sampling the template again.
  Point evaluated_at;
  std::vector<float> value, gradient;
};

template <class Taps>
BandFit fit_band(const Frame& frame, const std::vector<std::pair<int, int>>& pixels, double mean_time,
                 const FrameScanMap& map, const Template& tpl, double max_offset, Point fast) {
  BandFit fit;
  std::vector<Point> q(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) q[i] = map.probed(pixels[i].first, pixels[i].second);
  fit.value.resize(pixels.size());
  fit.gradient.resize(pixels.size());
  // The band's pixel values, read once (the loop below stores floats, which
  // the compiler must assume could be the frame's).
  std::vector<float> f(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) f[i] = frame.at(pixels[i].first, pixels[i].second);
  double c = 0.0;
  for (int iteration = 0; iteration < 3; ++iteration) {
    // Normal equations in (delta_x, delta_y, c) with the gradient (gx, gy, 1):
    // the symmetric matrix's six sums in locals (a[m][l] += g[m] g[l] over
    // all nine made the same numbers three times; times 1 is exact).
    double a00 = 0, a01 = 0, a02 = 0, a11 = 0, a12 = 0, a22 = 0, b0 = 0, b1 = 0, b2 = 0;
    // The noise model's count and sum of r^2 are a22 and rr (the same
    // additions): n1, n2, n4 are its own.
    double rr = 0.0, n1 = 0, n2 = 0, n4 = 0, ff0 = 0.0, ff1 = 0.0;
    std::size_t n = 0;
    fit.evaluated_at = fit.delta;
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      double v, gx, gy;
      if (!tpl.at<Taps>({q[i].x + fit.delta.x, q[i].y + fit.delta.y}, v, gx, gy)) {
        fit.value[i] = fit.gradient[i] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
      fit.value[i] = static_cast<float>(v);
      fit.gradient[i] = static_cast<float>(gx * fast.x + gy * fast.y);
      const double fv = f[i], r = fv - v - c;
      a00 += gx * gx, a01 += gx * gy, a02 += gx, a11 += gy * gy, a12 += gy, a22 += 1.0;
      b0 += gx * r, b1 += gy * r, b2 += r;
      rr += r * r;
      ff0 += fv, ff1 += fv * fv;
      n1 += v, n2 += v * v, n4 += v * r * r;
      ++n;
    }
    const double a[3][3] = {{a00, a01, a02}, {a01, a11, a12}, {a02, a12, a22}}, b[3] = {b0, b1, b2};
    const double noise[5] = {a22, n1, n2, rr, n4}, ff[2] = {ff0, ff1};
    if (n < 32) return fit;
    std::copy(noise, noise + 5, fit.noise_sums);
    // Eliminate the offset (Schur complement), solve the 2x2 for delta.
    const double s00 = a[0][0] - a[0][2] * a[2][0] / a[2][2], s01 = a[0][1] - a[0][2] * a[2][1] / a[2][2];
    const double s11 = a[1][1] - a[1][2] * a[2][1] / a[2][2];
    const double r0 = b[0] - a[0][2] * b[2] / a[2][2], r1 = b[1] - a[1][2] * b[2] / a[2][2];
    const double det = s00 * s11 - s01 * s01;
    if (!(det > 0.0)) return fit;
    const double ddx = (s11 * r0 - s01 * r1) / det, ddy = (s00 * r1 - s01 * r0) / det;
    fit.delta.x = std::clamp(fit.delta.x + ddx, -max_offset, max_offset);
    fit.delta.y = std::clamp(fit.delta.y + ddy, -max_offset, max_offset);
    c += (b[2] - a[2][0] * ddx - a[2][1] * ddy) / a[2][2];
    fit.residual_var = rr / static_cast<double>(n - 3);
    const double nn = static_cast<double>(n);
    fit.explains = fit.residual_var < (ff[1] - ff[0] * ff[0] / nn) / (nn - 1.0);
    // Confidence: the smaller eigenvalue of the information matrix, over the
    // residual variance (a featureless or noisy band weighs little).
    const double tr = s00 + s11, disc = std::sqrt(std::max(0.0, 0.25 * tr * tr - det));
    fit.weight = (0.5 * tr - disc) / std::max(fit.residual_var, 1e-12);
    // Converged once a step is below 0.1 px: the step's own error is second
    // order in it (measured: 0.1 instead of 0.03 left every estimate of
    // bench_scan_distortion within 0.0004 px and saved a quarter of the band
    // fits' template samples).
    if (std::hypot(ddx, ddy) < 0.1) break;
  }
  // A band stuck on the bound did not find its match: it gives no sample.
  if (std::fabs(fit.delta.x) >= max_offset || std::fabs(fit.delta.y) >= max_offset) return fit;
  // The sample is the whole displacement the band saw: the path, the
  // (slow part of the) lines' jitter and the correction.
  double px = 0, py = 0;
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const Point at = map.unmoved(pixels[i].first, pixels[i].second);  // the pixel in frame 0's orientation
    px += q[i].x - at.x, py += q[i].y - at.y;
  }
  const double n = static_cast<double>(pixels.size());
  fit.t = mean_time;
  fit.mean_path = {px / n, py / n};
  fit.ok = fit.weight > 0.0;
  return fit;
}

// The line's jitter by 1-D matching against the template along the fast
// axis: least squares of r ~ g * dj (means of r and g removed, so an
// intensity offset does not pull, each pixel weighted by the noise model)
// by a fixed number of Gauss-Newton steps from `j`, the previous round's
// estimate. Fixed: stopping once a step was small made the estimate jump
// with the last bits of the template, and 1 and 3 ranks (whose sums round
// differently) then differed by 0.0104 px on a line. Two from no estimate
// (j = 0, the first round), then one: measured on bench_scan_distortion,
// two steps throughout cost 11% more of the correction's time for jitter
// errors within 0.0024 px, and one throughout left the real-content case's
// average at +10.3% of the oracle's on 512² frames (+7.5% this way). Returns the estimate; `information` gets the
// weighted sum (g - mean g)^2 at it (0 where the line has too little structure). `split` gets the squared difference of
// the step measured on each half of the line alone and the sum of the halves' inverse informations: their ratio, pooled
// over lines, is the variance scale of the estimates as they really scatter (template noise and misfit included, which
// the pixel noise alone misses). `q` are the points the line's pixels show without jitter (read only by the steps that
// do not reuse first_value).
template <class Taps>
double fit_line_jitter(const Frame& frame, const std::vector<std::pair<int, int>>& pixels, const std::vector<Point>& q,
                       Point fast, const Template& tpl, const LineNoiseModel& noise, double j, double max_jitter,
                       double& information, double split[2], const float* first_value = nullptr,
                       const float* first_gradient = nullptr) {
  information = 0.0;
  split[0] = split[1] = 0.0;
  const double start = j;
  const std::size_t half = pixels.size() / 2;
  const int steps = j == 0.0 ? 2 : 1;  // two from no estimate (the first round), one from the last round's
  for (int iteration = 0; iteration < steps; ++iteration) {
    // Weighted sums per half of the line: g, r, g^2, g*r, weight; and the count.
    // Each half in a loop of its own with the sums in locals (through a
    // pointer into h they went to memory at every pixel): the same additions
    // in the same order.
    // Then w e, w e g, w e g^2: a pixel's weight w carries its template's
    // share (at_for_lines), which is no inverse variance, so the fit's
    // variance is the sandwich sum w^2 g^2 var / (sum w g^2)^2, not
    // 1 / sum w g^2 (that read a line on the thin edge of the average
    // share^-1 times less precise than it is, and shrank its jitter the
    // more). var = (1 + 1 / c) / nw relative to the well-covered pixels'
    // (1 + 1 / m) / nw (nw the noise model's weight; c the template's frames
    // there, m its min_coverage): w^2 var = w e with e = share (1 + 1 / c) /
    // (1 + 1 / m), 1 where share is.
    double h[2][9] = {};
    const bool reuse = iteration == 0 && first_value;
    auto sum_half = [&](std::size_t i0, std::size_t i1, double* out) {
      double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0, s8 = 0.0;
      for (std::size_t i = i0; i < i1; ++i) {
        double v, g, share = 1.0;
        if (reuse && !std::isnan(first_value[i])) {  // the band's last evaluation, at this very point
          v = first_value[i], g = first_gradient[i];
        } else {
          double gx, gy;
          if (!tpl.at_for_lines<Taps>({q[i].x + j * fast.x, q[i].y + j * fast.y}, v, gx, gy, share)) continue;
          g = gx * fast.x + gy * fast.y;
        }
        const double r = frame.at(pixels[i].first, pixels[i].second) - v;
        const double w = noise.weight(v) * share;
        double ws = w;
        if (share < 1.0) {
          const double c = tpl.min_coverage * std::sqrt(share);
          ws = w * share * (1.0 + 1.0 / c) / (1.0 + 1.0 / tpl.min_coverage);
        }
        s0 += w * g, s1 += w * r, s2 += w * g * g, s3 += w * g * r, s4 += w, s5 += 1.0;
        s6 += ws, s7 += ws * g, s8 += ws * g * g;
      }
      out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3, out[4] = s4, out[5] = s5, out[6] = s6, out[7] = s7,
      out[8] = s8;
    };
    sum_half(0, half, h[0]);
    sum_half(half, pixels.size(), h[1]);
    // Centred information and correlation of a set of sums.
    auto centred = [](const double* a, double& cgg, double& cgr) {
      cgg = a[4] > 0 ? a[2] - a[0] * a[0] / a[4] : 0.0;
      cgr = a[4] > 0 ? a[3] - a[0] * a[1] / a[4] : 0.0;
    };
    // The inverse variance of the offset from a set of sums with centred
    // information cgg: cgg itself where every share is 1 (the same sums).
    auto precision = [](const double* a, double cgg) {
      if (a[6] == a[4] && a[7] == a[0] && a[8] == a[2]) return cgg;
      const double mean_g = a[0] / a[4];
      const double sandwich = a[8] - 2.0 * mean_g * a[7] + mean_g * mean_g * a[6];
      return sandwich > 0 ? cgg * cgg / sandwich : cgg;
    };
    double all[9];
    for (int m = 0; m < 9; ++m) all[m] = h[0][m] + h[1][m];
    if (all[5] < 8) {
      information = 0.0;
      return start;
    }
    double cgg, cgr;
    centred(all, cgg, cgr);
    if (!(cgg > 0)) {
      information = 0.0;
      return start;
    }
    information = precision(all, cgg);
    double gg[2], gr[2];
    centred(h[0], gg[0], gr[0]);
    centred(h[1], gg[1], gr[1]);
    if (gg[0] > 0 && gg[1] > 0 && h[0][5] >= 4 && h[1][5] >= 4) {
      const double d = gr[0] / gg[0] - gr[1] / gg[1];
      split[0] = d * d, split[1] = 1.0 / precision(h[0], gg[0]) + 1.0 / precision(h[1], gg[1]);
    } else {
      split[0] = split[1] = 0.0;
    }
    const double step = cgr / cgg;
    j = std::clamp(j + step, -max_jitter, max_jitter);
  }
  return j;
}

// One line's sums for the line field's normal equations. The regressors: x_m = g b_m (the gradient along the fast axis
// times coefficient m's basis at the pixel's sample); the line's nuisances: an intensity offset (1) and a shift (g),
// fitted with the field and taken out.
// A pixel touches 4 consecutive coefficients, so sum w x_m x_n is a band
// (|m - n| <= 3): 7 numbers a coefficient, not knots (a line's sums stay
// O(knots) however fine the field).
struct FieldSums {
  static constexpr int kBand = 3;
  explicit FieldSums(int knots = 0)
      : s(static_cast<std::size_t>(knots), 0.0),
        sg(s.size(), 0.0),
        q(s.size(), 0.0),
        p(s.size() * (2 * kBand + 1), 0.0) {}
  std::vector<double> s, sg, q, p;  // sum w x_m, sum w x_m g, sum w x_m e, sum w x_m x_n (band)
  double& band(std::size_t m, std::size_t n) { return p[m * (2 * kBand + 1) + kBand + n - m]; }
  double nuisance[3] = {};      // sum w, sum w g, sum w g^2
  double nuisance_rhs[2] = {};  // sum w e, sum w g e

  // Adds the line's normal equations for the field, its nuisances
  // eliminated (Schur complement), to a and b; false if it has none.
  bool add_to(std::vector<double>& a, std::vector<double>& b) const {
    const std::size_t n = s.size();
    const double det = nuisance[0] * nuisance[2] - nuisance[1] * nuisance[1];
    if (!(nuisance[0] > 0) || !(det > 1e-9 * nuisance[0] * nuisance[2])) return false;
    // N^-1 of [[sum w, sum w g], [sum w g, sum w g^2]].
    const double i00 = nuisance[2] / det, i01 = -nuisance[1] / det, i11 = nuisance[0] / det;
    const std::size_t width = 2 * kBand + 1;
    for (std::size_t i = 0; i < n; ++i) {
      const double ci0 = s[i] * i00 + sg[i] * i01, ci1 = s[i] * i01 + sg[i] * i11;  // (C N^-1)_i
      b[i] += q[i] - ci0 * nuisance_rhs[0] - ci1 * nuisance_rhs[1];
      for (std::size_t j = 0; j < n; ++j) a[i * n + j] -= ci0 * s[j] + ci1 * sg[j];
      for (std::size_t j = i >= kBand ? i - kBand : 0; j < n && j <= i + kBand; ++j)
        a[i * n + j] += p[i * width + kBand + j - i];
    }
    return true;
  }
};

// A small symmetric positive definite matrix (n x n, row-major) replaced by
// its Cholesky factor L (lower triangle); false if it is not.
bool cholesky(std::vector<double>& a, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (std::size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) return false;
    a[j * n + j] = std::sqrt(d);
    for (std::size_t i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (std::size_t k = 0; k < j; ++k) v -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = v / a[j * n + j];
    }
  }
  return true;
}

// Solves L L^T x = b in place (b: n numbers), L from cholesky().
void cholesky_solve(const std::vector<double>& l, std::size_t n, double* b) {
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < i; ++k) b[i] -= l[i * n + k] * b[k];
    b[i] /= l[i * n + i];
  }
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t k = i + 1; k < n; ++k) b[i] -= l[k * n + i] * b[k];
    b[i] /= l[i * n + i];
  }
}

// Solves a small symmetric positive definite system in place (a is
// overwritten by its factor); false if it is not.
bool solve_spd(std::vector<double>& a, std::vector<double>& b) {
  if (!cholesky(a, b.size())) return false;
  cholesky_solve(a, b.size(), b.data());
  return true;
}

// The pixels of each line of a frame, in scan order of lines.
std::vector<std::vector<std::pair<int, int>>> pixels_by_line(const ScanTiming& timing) {
  std::vector<std::vector<std::pair<int, int>>> lines(static_cast<std::size_t>(timing.lines()));
  for (int y = 0; y < timing.height(); ++y)
    for (int x = 0; x < timing.width(); ++x) lines[static_cast<std::size_t>(timing.line_of(x, y))].push_back({x, y});
  return lines;
}

}  // namespace

Point ScanModel::probed(const ScanTiming& timing, std::size_t frame, double x, double y) const {
  const Point d = path.at(timing.time_of(frame, x, y));
  double j = 0.0;
  if (frame < jitter.size() && !jitter[frame].empty()) {
    const int line = timing.line_of(static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y)));
    j = jitter[frame][static_cast<std::size_t>(line)];
  }
  if (frame < field.size() && !field_basis.empty()) {
    double w[4];
    const int first = field_basis.weights(timing.sample_of(x, y), w);
    for (int a = 0; a < 4; ++a)
      if (w[a] != 0.0) j += w[a] * field[frame][static_cast<std::size_t>(first) + static_cast<std::size_t>(a)];
  }
  if (timing.turned()) {  // the recorded pixel moved along its own line, turned, then drifted
    const Point fast = timing.fast_axis();
    const Point p = timing.turn(frame).apply(x + j * fast.x, y + j * fast.y);
    return {p.x + d.x, p.y + d.y};
  }
  const Point fast = timing.fast_axis();
  return {x + d.x + j * fast.x, y + d.y + j * fast.y};
}

Point ScanModel::pixel_showing(const ScanTiming& timing, std::size_t frame, Point q) const {
  return FrameScanMap(timing, *this, frame).pixel_showing(q);
}

namespace {
const std::vector<double> no_jitter;
}

FrameScanMap::FrameScanMap(const ScanTiming& timing, const ScanModel& model, std::size_t frame)
    : FrameScanMap(timing, model.path, frame < model.jitter.size() ? model.jitter[frame] : no_jitter, frame,
                   frame < model.field.size() ? model.field_basis.tabulate(model.field[frame]) : no_jitter) {}

FrameScanMap::FrameScanMap(const ScanTiming& timing, const DriftPath& path, const std::vector<double>& jitter,
                           std::size_t frame, const std::vector<double>& field) {
  copy_geometry(timing, frame);
  const int lines = timing.lines(), samples = timing.samples_per_line();
  const Point fast = timing.fast_axis();
  const bool has_jitter = !jitter.empty();
  start_.resize(static_cast<std::size_t>(lines));
  per_sample_.resize(static_cast<std::size_t>(lines));
  for (int l = 0; l < lines; ++l) {
    const double t0 = timing.line_start(frame, l);
    const Point a = unturned(path.at(t0)), b = unturned(path.at(t0 + std::max(1, samples - 1) * timing.dwell()));
    const double j = has_jitter ? jitter[static_cast<std::size_t>(l)] : 0.0;
    start_[static_cast<std::size_t>(l)] = {a.x + j * fast.x, a.y + j * fast.y};
    const double inv = samples > 1 ? 1.0 / (samples - 1) : 0.0;
    per_sample_[static_cast<std::size_t>(l)] = {(b.x - a.x) * inv, (b.y - a.y) * inv};
  }
  mid_ = unturned(path.at(timing.frame_mid_time(frame)));
  if (has_jitter && std::any_of(jitter.begin(), jitter.end(), [](double j) { return j != 0.0; })) jitter_ = jitter;
  if (field.size() == static_cast<std::size_t>(samples) &&
      std::any_of(field.begin(), field.end(), [](double c) { return c != 0.0; }))
    field_ = field;
}

FrameScanMap FrameScanMap::rigid(const ScanTiming& timing, Point offset, std::size_t frame) {
  FrameScanMap m;
  m.copy_geometry(timing, frame);
  offset = m.unturned(offset);
  m.start_.assign(static_cast<std::size_t>(timing.lines()), offset);
  m.per_sample_.assign(static_cast<std::size_t>(timing.lines()), Point{});
  m.mid_ = offset;
  return m;
}

FrameScanMap FrameScanMap::from_lines(const ScanTiming& timing, const std::vector<Point>& mid_drift,
                                      const std::vector<double>& jitter, const std::vector<double>& field,
                                      std::size_t frame) {
  const std::size_t lines = static_cast<std::size_t>(timing.lines());
  if (mid_drift.size() != lines || jitter.size() != lines)
    throw bad_input("scan distortion: a table of " + std::to_string(mid_drift.size()) + " lines for frames of " +
                    std::to_string(lines));
  FrameScanMap m;
  m.copy_geometry(timing, frame);
  m.start_.resize(lines);
  m.per_sample_.resize(lines);
  const Point fast = timing.fast_axis();
  const double half = 0.5 * std::max(0, timing.samples_per_line() - 1);
  for (std::size_t l = 0; l < lines; ++l) {
    // Velocity from the neighbouring lines (one-sided at the ends), per dwell.
    const std::size_t a = l > 0 ? l - 1 : l, b = l + 1 < lines ? l + 1 : l;
    const double dt = static_cast<double>(b - a) * timing.line_time();
    const Point v = dt > 0 ? m.unturned({(mid_drift[b].x - mid_drift[a].x) / dt * timing.dwell(),
                                         (mid_drift[b].y - mid_drift[a].y) / dt * timing.dwell()})
                           : Point{};
    const Point d = m.unturned(mid_drift[l]);
    m.per_sample_[l] = v;
    m.start_[l] = {d.x - half * v.x + jitter[l] * fast.x, d.y - half * v.y + jitter[l] * fast.y};
  }
  m.mid_ = m.unturned(mid_drift[lines / 2]);
  if (std::any_of(jitter.begin(), jitter.end(), [](double j) { return j != 0.0; })) m.jitter_ = jitter;
  if (field.size() == static_cast<std::size_t>(timing.samples_per_line()) &&
      std::any_of(field.begin(), field.end(), [](double c) { return c != 0.0; }))
    m.field_ = field;
  return m;
}

FrameScanMap FrameScanMap::without_jitter() const {
  FrameScanMap m = *this;
  const Point fast = timing_->fast_axis();
  for (std::size_t l = 0; l < jitter_.size(); ++l)
    m.start_[l].x -= jitter_[l] * fast.x, m.start_[l].y -= jitter_[l] * fast.y;
  m.jitter_.clear();
  m.field_.clear();
  return m;
}

Frame FrameScanMap::lines_aligned(const Frame& frame) const {
  if (jitter_.empty() && field_.empty()) return frame;
  // Lines as rows (a 90°-rotated scan's lines are columns). Pixel x of line l
  // shows what the jitter-free line shows at x + j: the aligned line at x is
  // the line at x - j.
  Frame rows = rotated_ ? detail::transposed(frame) : frame;
  Frame coeffs = rows;
  detail::bspline_prefilter_rows(coeffs);  // along each line only
  const int n = rows.width,
            lines = jitter_.empty() ? rows.height : std::min(rows.height, static_cast<int>(jitter_.size()));
#pragma omp parallel for schedule(static)
  for (int l = 0; l < lines; ++l) {
    const double shift = jitter_.empty() ? 0.0 : -jitter_[static_cast<std::size_t>(l)];
    const float* c = coeffs.row(l);
    float* out = rows.row(l);
    if (!field_.empty()) {
      // Pixel x shows what the field-free line shows at x + j + h(s(x)):
      // the aligned line at u is the line at the x solving that (h is
      // smooth and far below a pixel per pixel: three fixed-point steps).
      const bool reversed = serpentine_ && (l & 1);
      for (int u = 0; u < n; ++u) {
        double x = u + shift;
        for (int step = 0; step < 3; ++step) {
          const double along = std::clamp(x, 0.0, static_cast<double>(n - 1));
          x = u + shift - field_at(reversed ? last_sample_ - along : along);
        }
        const int whole = static_cast<int>(std::floor(x));
        double w[4];
        bspline_weights(x - whole, w);
        double v = 0.0;
        for (int i = 0; i < 4; ++i) {
          int at = whole - 1 + i;
          if (at < 0) at = -at;
          if (at >= n) at = 2 * (n - 1) - at;
          v += w[i] * c[std::clamp(at, 0, n - 1)];
        }
        out[u] = static_cast<float>(v);
      }
      continue;
    }
    if (shift == 0.0) continue;
    const int whole = static_cast<int>(std::floor(shift));
    double w[4];
    bspline_weights(shift - whole, w);
    // Pixels whose four taps lie inside the line need no mirroring (the
    // same sums in the same order as the edges' loop).
    const int inside0 = std::clamp(1 - whole, 0, n), inside1 = std::clamp(n - 2 - whole, inside0, n);
    auto mirrored = [&](int x) {
      double v = 0.0;
      for (int i = 0; i < 4; ++i) {
        int at = x + whole - 1 + i;
        // Mirror-symmetric, as the prefilter assumes.
        if (at < 0) at = -at;
        if (at >= n) at = 2 * (n - 1) - at;
        v += w[i] * c[std::clamp(at, 0, n - 1)];
      }
      out[x] = static_cast<float>(v);
    };
    for (int x = 0; x < inside0; ++x) mirrored(x);
    for (int x = inside0; x < inside1; ++x) {
      const float* p = c + x + whole - 1;
      double v = 0.0;
      v += w[0] * p[0];
      v += w[1] * p[1];
      v += w[2] * p[2];
      v += w[3] * p[3];
      out[x] = static_cast<float>(v);
    }
    for (int x = inside1; x < n; ++x) mirrored(x);
  }
  return rotated_ ? detail::transposed(rows) : rows;
}

void FrameScanMap::copy_geometry(const ScanTiming& timing, std::size_t frame) {
  timing_ = &timing;
  turned_ = timing.turned() && quarter_turns(timing.scan_rotation(frame)) != 0;
  if (turned_) turn_ = timing.turn(frame), unturn_ = turn_.inverse();
  rotated_ = timing.settings().direction == ScanDirection::rotated90;
  serpentine_ = timing.settings().direction == ScanDirection::serpentine;
  lines_ = timing.lines();
  last_sample_ = timing.samples_per_line() - 1;
}

Point FrameScanMap::pixel_showing(Point q) const {
  // Fixed-point steps: d changes by far less than a pixel per pixel. A turned
  // frame's start: its recorded pixel under the offset at mid-frame.
  Point p = turned_ ? unturn_.apply(q) : q;
  p = {p.x - mid_.x, p.y - mid_.y};
  for (int step = 0; step < 4; ++step) {
    const Point r = probed(p.x, p.y);
    const Point e = unturned({q.x - r.x, q.y - r.y});
    p.x += e.x;
    p.y += e.y;
  }
  return p;
}

void FrameScanMap::pixels_showing_row(Point q0, int count, Point* out) const {
  // The step of q along the row, in the frame's recorded axes.
  const Point dq = turned_ ? Point{unturn_.a, unturn_.c} : Point{1.0, 0.0};
  int line = 0;
  for (int i = 0; i < count;) {
    const Point p0 = pixel_showing_near({q0.x + i, q0.y}, line);
    const Point step = pixel_step_on_line(dq, line);
    out[i] = p0;
    int k = i + 1;
    for (; k < count; ++k) {
      const double t = k - i;
      const Point p{p0.x + t * step.x, p0.y + t * step.y};
      if (nearest_line(rotated_ ? p.x : p.y) != line) break;
      out[k] = p;
    }
    i = k;
  }
}

void SpecimenExtent::add(Point q) {
  xmin = std::min(xmin, q.x), xmax = std::max(xmax, q.x), ymin = std::min(ymin, q.y), ymax = std::max(ymax, q.y);
}

void SpecimenExtent::merge(const SpecimenExtent& o) {
  xmin = std::min(xmin, o.xmin), xmax = std::max(xmax, o.xmax), ymin = std::min(ymin, o.ymin),
  ymax = std::max(ymax, o.ymax);
}

namespace {
// The box the border of a w x h frame maps to: the footprint's box, the map
// being continuous.
SpecimenExtent border_extent(const FrameScanMap& map, int w, int h) {
  SpecimenExtent e;
  for (int x = 0; x < w; ++x) e.add(map.probed(x, 0)), e.add(map.probed(x, h - 1));
  for (int y = 0; y < h; ++y) e.add(map.probed(0, y)), e.add(map.probed(w - 1, y));
  return e;
}
}  // namespace

SpecimenExtent frame_extent(const FrameScanMap& map, const ScanTiming& timing) {
  return border_extent(map, timing.width(), timing.height());
}

SpecimenGrid SpecimenGrid::covering(const SpecimenExtent& extent, const ScanTiming& timing) {
  if (extent.empty()) throw bad_input("scan distortion: no frame to average");
  SpecimenGrid g;
  // Snapped with a margin well above lines.csv's rounding (1e-5 px), so that
  // re-averaging from the table (average --lines) lands on the same grid.
  constexpr double snap = 1e-3;
  g.origin = {std::floor(extent.xmin + snap), std::floor(extent.ymin + snap)};
  const double w = std::ceil(extent.xmax - snap) - g.origin.x + 1, h = std::ceil(extent.ymax - snap) - g.origin.y + 1;
  if (w > 8.0 * timing.width() + 64 || h > 8.0 * timing.height() + 64)
    throw bad_input("scan distortion: the drift spans " + message_number(w) + "x" + message_number(h) +
                    " px, far beyond the frames; the rigid drift is not a usable start");
  g.width = static_cast<int>(w), g.height = static_cast<int>(h);
  return g;
}

namespace {
// One output row of sample_in_specimen_coordinates: the spline of `coeffs`
// at the frame points `showing` (NaN outside the frame or before from_sample).
template <class Taps>
void sample_row(const Frame& coeffs, const FrameScanMap& map, const Point* showing, int count, double from_sample,
                float* row) {
  const int w = coeffs.width, h = coeffs.height;
  const std::size_t stride = static_cast<std::size_t>(w);
  for (int i = 0; i < count; ++i) {
    const Point p = showing[i];
    if (p.x < 0.0 || p.y < 0.0 || p.x > w - 1 || p.y > h - 1) continue;
    if (from_sample > 0.0 && map.sample_at(p) < from_sample) continue;
    const int ix = static_cast<int>(p.x), iy = static_cast<int>(p.y);  // p >= 0: truncation is floor
    if (ix >= 1 && iy >= 1 && ix + 2 < w && iy + 2 < h) {
      row[i] =
          Taps::value(coeffs.row(iy - 1) + ix - 1, stride, static_cast<float>(p.x - ix), static_cast<float>(p.y - iy));
    } else {
      row[i] = static_cast<float>(sample_bspline(coeffs, p.x, p.y));  // edge taps clamped
    }
  }
}
// Its AVX2 + FMA build (see Sse2Taps).
[[gnu::flatten]] DRIFTSCAN_AVX2_TARGET void sample_row_avx2(const Frame& coeffs, const FrameScanMap& map,
                                                            const Point* showing, int count, double from_sample,
                                                            float* row) {
  sample_row<FmaTaps>(coeffs, map, showing, count, from_sample, row);
}
}  // namespace

FrameContribution sample_in_specimen_coordinates(const Frame& frame, const FrameScanMap& map_with_jitter,
                                                 const SpecimenGrid& grid, double from_sample) {
  // Each line at its own fast-axis position first, then the smooth map.
  Frame coeffs = map_with_jitter.lines_aligned(frame);
  const FrameScanMap map = map_with_jitter.without_jitter();
  bspline_prefilter(coeffs);
  const int w = frame.width, h = frame.height;
  const bool avx2 = simd_level() == SimdLevel::avx2;
  // Only the grid pixels in the frame's footprint (the box its border maps
  // to, with a margin): the grid spans the whole series' drift, up to twice
  // a frame's area, and outside the footprint every inverse is wasted.
  const SpecimenExtent box = border_extent(map, w, h);
  FrameContribution c;
  c.i0 = std::max(0, static_cast<int>(std::floor(box.xmin - grid.origin.x)) - 2);
  c.j0 = std::max(0, static_cast<int>(std::floor(box.ymin - grid.origin.y)) - 2);
  c.width = std::max(0, std::min(grid.width, static_cast<int>(std::ceil(box.xmax - grid.origin.x)) + 3) - c.i0);
  c.height = std::max(0, std::min(grid.height, static_cast<int>(std::ceil(box.ymax - grid.origin.y)) + 3) - c.j0);
  c.value.assign(static_cast<std::size_t>(c.width) * static_cast<std::size_t>(c.height),
                 std::numeric_limits<float>::quiet_NaN());
#pragma omp parallel
  {
    std::vector<Point> showing(static_cast<std::size_t>(c.width));
#pragma omp for schedule(static)
    for (int j = 0; j < c.height; ++j) {
      // Along an output row the pixel stays on one line for long runs.
      map.pixels_showing_row({grid.origin.x + c.i0, grid.origin.y + c.j0 + j}, c.width, showing.data());
      float* row = c.value.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(c.width);
      if (avx2) sample_row_avx2(coeffs, map, showing.data(), c.width, from_sample, row);
      else sample_row<Sse2Taps>(coeffs, map, showing.data(), c.width, from_sample, row);
    }
  }
  return c;
}

void add_contribution(const FrameContribution& c, const SpecimenGrid& grid, std::vector<double>& sum,
                      std::vector<double>& coverage) {
#pragma omp parallel for schedule(static) if (c.value.size() >= 65536)
  for (int j = 0; j < c.height; ++j) {
    const float* row = c.value.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(c.width);
    const std::size_t at = static_cast<std::size_t>(c.j0 + j) * static_cast<std::size_t>(grid.width) + c.i0;
    for (int i = 0; i < c.width; ++i)
      if (!std::isnan(row[i])) sum[at + i] += row[i], coverage[at + i] += 1.0;
  }
}

void add_contribution_squares(const FrameContribution& c, const SpecimenGrid& grid, std::vector<double>& squares) {
#pragma omp parallel for schedule(static) if (c.value.size() >= 65536)
  for (int j = 0; j < c.height; ++j) {
    const float* row = c.value.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(c.width);
    const std::size_t at = static_cast<std::size_t>(c.j0 + j) * static_cast<std::size_t>(grid.width) + c.i0;
    for (int i = 0; i < c.width; ++i)
      if (!std::isnan(row[i])) squares[at + i] += double(row[i]) * row[i];
  }
}

Frame specimen_sigma(const SpecimenGrid& grid, const std::vector<double>& sum, const std::vector<double>& squares,
                     const std::vector<double>& coverage) {
  Frame sigma(grid.width, grid.height, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t i = 0; i < sigma.pixels.size() && i < sum.size(); ++i)
    if (coverage[i] > 1.5) sigma.pixels[i] = static_cast<float>(mean_standard_error(sum[i], squares[i], coverage[i]));
  return sigma;
}

void accumulate_in_specimen_coordinates(const Frame& frame, const FrameScanMap& map, const SpecimenGrid& grid,
                                        std::vector<double>& sum, std::vector<double>& coverage) {
  add_contribution(sample_in_specimen_coordinates(frame, map, grid), grid, sum, coverage);
}

SpecimenImage finish_specimen_average(const SpecimenGrid& grid, const std::vector<double>& sum,
                                      const std::vector<double>& coverage) {
  SpecimenImage out;
  out.origin = grid.origin;
  // Uncovered pixels take the mean, so the image has no artificial edges.
  double total = 0, count = 0;
  for (std::size_t i = 0; i < sum.size(); ++i)
    if (coverage[i] > 0) total += sum[i] / coverage[i], count += 1;
  out.image = Frame(grid.width, grid.height, count > 0 ? static_cast<float>(total / count) : 0.0f);
  out.coverage = Frame(grid.width, grid.height, 0.0f);
  for (std::size_t i = 0; i < sum.size(); ++i) {
    out.coverage.pixels[i] = static_cast<float>(coverage[i]);
    if (coverage[i] > 0) out.image.pixels[i] = static_cast<float>(sum[i] / coverage[i]);
  }
  return out;
}

SpecimenImage finish_split_average(const SpecimenGrid& grid, std::vector<double> sum[2],
                                   std::vector<double> coverage[2], std::size_t even, std::size_t odd,
                                   AverageNoise& noise) {
  noise.even = even, noise.odd = odd;
  noise.half_difference = Frame(grid.width, grid.height, 0.0f);
  for (std::size_t i = 0; i < noise.half_difference.pixels.size(); ++i) {
    if (coverage[0][i] > 0 && coverage[1][i] > 0)
      noise.half_difference.pixels[i] = static_cast<float>(sum[0][i] / coverage[0][i] - sum[1][i] / coverage[1][i]);
    sum[0][i] += sum[1][i], coverage[0][i] += coverage[1][i];
  }
  sum[1] = {}, coverage[1] = {};  // added in: their memory goes to the image
  return finish_specimen_average(grid, sum[0], coverage[0]);
}

SpecimenImage average_in_specimen_coordinates(const FrameSource& frames, const ScanTiming& timing,
                                              const ScanModel& model, AverageNoise* noise,
                                              std::vector<FrameContribution>* kept, const std::vector<char>* left_out,
                                              double from_sample) {
  const std::size_t n = frames.frame_count();
  auto out = [&](std::size_t k) { return left_out && k < left_out->size() && (*left_out)[k]; };
  SpecimenExtent extent;
  for (std::size_t k = 0; k < n; ++k)
    if (!out(k)) extent.merge(frame_extent(FrameScanMap(timing, model, k), timing));
  const SpecimenGrid grid = SpecimenGrid::covering(extent, timing);
  const std::size_t size = static_cast<std::size_t>(grid.width) * static_cast<std::size_t>(grid.height);
  // Even and odd frames apart (their difference is the noise), then added.
  std::vector<double> sum[2] = {std::vector<double>(size, 0.0), std::vector<double>(noise ? size : 0, 0.0)};
  std::vector<double> coverage[2] = {sum[0], sum[1]};
  // The final average (no noise, nothing kept) carries its standard error.
  const bool final_average = !noise && !kept;
  std::vector<double> squares(final_average ? size : 0, 0.0);
  ContributionBudget budget(kept);
  std::size_t counted[2] = {0, 0};
  for (std::size_t k = 0; k < n; ++k) {
    if (out(k)) {
      budget.keep(FrameContribution{});
      continue;
    }
    const std::size_t half = noise ? k % 2 : 0;
    FrameContribution c =
        sample_in_specimen_coordinates(*frames.shared_frame(k), FrameScanMap(timing, model, k), grid, from_sample);
    add_contribution(c, grid, sum[half], coverage[half]);
    if (final_average) add_contribution_squares(c, grid, squares);
    budget.keep(std::move(c));
    ++counted[k % 2];
  }
  if (final_average) {
    SpecimenImage out = finish_specimen_average(grid, sum[0], coverage[0]);
    out.sigma = specimen_sigma(grid, sum[0], squares, coverage[0]);
    return out;
  }
  if (!noise) return finish_specimen_average(grid, sum[0], coverage[0]);
  return finish_split_average(grid, sum, coverage, counted[0], counted[1], *noise);
}

struct ScanDistortionSteps::Template : driftscan::Template {
  SpecimenImage average;                               // a leave-one-out template's has no image (template_without)
  DriftPath path;                                      // of the model the average was built under
  std::shared_ptr<const TemplateWienerFilter> filter;  // applied to what the fits sample (null: none)
};

ScanDistortionSteps::ScanDistortionSteps(const ScanTiming& timing, const ScanDistortionSettings& settings,
                                         std::size_t frames)
    : timing_(timing), settings_(settings), frames_(frames) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw bad_input("scan distortion: " + what);
  };
  require(frames >= 1, "the series has no frames");
  require(settings.band_lines >= 4 && settings.band_lines <= timing.lines(),
          "band lines must be between 4 and the " + std::to_string(timing.lines()) + " lines of a frame (got " +
              std::to_string(settings.band_lines) + ")");
  require(std::isfinite(settings.max_band_offset) && settings.max_band_offset > 0, "max band offset must be > 0");
  require(settings.max_rounds >= 0, "max rounds must be >= 0 (0: chosen)");
  require(std::isfinite(settings.jitter_prior) && settings.jitter_prior > 0, "jitter prior must be > 0");
  require(std::isfinite(settings.smoothing) && settings.smoothing >= 0, "smoothing must be >= 0");
  require(std::isfinite(settings.template_filter_noise_scale) && settings.template_filter_noise_scale > 0,
          "template filter noise scale must be > 0");
  left_out_.assign(frames, 0);
  require(settings.line_field_knots == 0 || (settings.line_field_knots >= 3 && settings.line_field_knots <= 64),
          "line field knots must be 0 (none) or 3 to 64 (got " + std::to_string(settings.line_field_knots) + ")");
  // Past half the line, the template (built from each line's samples past
  // the field's extent) would be too thin to register the bands against.
  require(settings.line_field_extent > 0 && settings.line_field_extent <= 0.5,
          "line field extent must be in (0, 0.5] of a line (got " + message_number(settings.line_field_extent) + ")");
  require(std::isfinite(settings.line_field_prior) && settings.line_field_prior > 0, "line field prior must be > 0");
  if (settings.line_field_knots > 0)
    field_basis_ = LineFieldBasis(timing.samples_per_line(), settings.line_field_knots,
                                  settings.line_field_extent * timing.samples_per_line());
  lines_ = pixels_by_line(timing);
  // Bands: consecutive lines; the remainder joins the last band.
  for (int l0 = 0; l0 < timing.lines(); l0 += settings.band_lines) {
    int l1 = std::min(timing.lines(), l0 + settings.band_lines);
    if (timing.lines() - l1 < settings.band_lines / 2) l1 = timing.lines();
    std::vector<std::pair<int, int>> band;
    for (int l = l0; l < l1; ++l)
      band.insert(band.end(), lines_[static_cast<std::size_t>(l)].begin(), lines_[static_cast<std::size_t>(l)].end());
    // The band's mean acquisition time from its frame's start.
    double t = 0.0;
    for (const auto& [x, y] : band) t += timing.time_of(0, x, y) - timing.frame_start(0);
    band_time_.push_back(t / static_cast<double>(band.size()));
    std::size_t first = 0;
    for (int l = l0; l < l1; ++l) {
      line_in_band_.emplace_back(bands_.size(), first);
      first += lines_[static_cast<std::size_t>(l)].size();
    }
    bands_.push_back(std::move(band));
    band_lines_.emplace_back(l0, l1);
    if (l1 == timing.lines()) break;
  }
}

int ScanDistortionSettings::rounds_for(const ScanTiming& timing) const {
  if (max_rounds > 0) return max_rounds;
  return has_scan_rotation(timing.settings().rotation_deg) ? 4 : 2;
}

namespace {
// Gauge: specimen coordinates are frame 0's pixels where frame 0 shows them
// on average, the path's mean over frame 0's lines 0 (the lines' jitter has
// each frame's mean 0): what a rigid registration's frame 0 (drift 0)
// means too. Not d(0) = 0: the path's first instant lies before the first
// band's time, where only frame 0's first band holds it (whose sample was
// measured 0.2-0.5 px off in most of bench_scan_distortion's draws, every
// other band's within about 0.1 px), and was off the truth by 0.1-0.3 px (up
// to 0.67 px on one orthogonal pair); that constant moved every average and
// lines.csv.
DriftPath to_gauge(const DriftPath& p, const ScanTiming& timing) {
  Point mean;
  const int lines = timing.lines();
  for (int l = 0; l < lines; ++l) {
    const Point d = p.at(timing.line_mid_time(0, l));
    mean.x += d.x / lines, mean.y += d.y / lines;
  }
  return p.shifted({-mean.x, -mean.y});
}
}  // namespace

ScanModel ScanDistortionSteps::initial_model(const std::vector<Point>& rigid_drift) const {
  if (rigid_drift.size() != frames_)
    throw bad_input("scan distortion: needs one rigid drift per frame (got " + std::to_string(rigid_drift.size()) +
                    " for " + std::to_string(frames_) + " frames)");
  ScanModel model;
  model.jitter.assign(frames_, std::vector<double>(static_cast<std::size_t>(timing_.lines()), 0.0));
  if (frames_ >= 2) {
    // A smooth path through the rigid shifts at the frames' mid times. Its
    // velocity already shears every frame the right way (the drift between
    // frames is the drift within them), which is most of the distortion.
    std::vector<DriftSample> rigid;
    for (std::size_t k = 0; k < frames_; ++k)
      if (!left_out(k)) rigid.push_back({timing_.frame_mid_time(k), rigid_drift[k].x, rigid_drift[k].y, 1.0});
    if (rigid.size() < 2) throw bad_input("scan distortion: fewer than 2 frames are left to follow");
    // Rigid shifts are accurate (hundredths of a pixel): nearly interpolate
    // them rather than smooth them away.
    DriftPathSettings ps;
    ps.knot_spacing = choose_knot_spacing(timing_.frame_time(), 1.0);
    ps.smoothing = 1e-3;
    model.path = DriftPath::fit(std::move(rigid), 0.0, t_end(), ps);
  } else {
    model.path = DriftPath().shifted(rigid_drift[0]);
  }
  model.path = to_gauge(model.path, timing_);
  return model;
}

DriftPath ScanDistortionSteps::fit_path(std::vector<DriftSample> samples) const {
  if (samples.size() < 2)
    throw bad_input("scan distortion: no band of any frame could be registered against the average");
  const double knots = path_knot_spacing();
  DriftPathSettings ps;
  ps.knot_spacing = knots;
  ps.smoothing = settings_.smoothing;
  // Unset (0): each axis's stiffness from the band samples themselves. The
  // fast axis's samples also carry each band's mean jitter, the slow axis's
  // do not, so the two need not agree.
  if (!(settings_.smoothing > 0.0))
    ps = cross_validated_smoothing(samples, 0.0, t_end(), knots, {0.0125, 0.05, 0.2, 0.8, 3.2, 12.8, 51.2});
  return to_gauge(DriftPath::fit(std::move(samples), 0.0, t_end(), ps), timing_);
}

// Frames in several directions: about two knots a band (at most 32 a
// frame, choose_knot_spacing) instead of one every two bands. There a time's
// path along each axis is seen by one frame only, along its slow axis
// without the lines' jitter for half the frames, and the drift's random walk
// moves ~0.07 px from band to band (bench_scan_distortion: 0.3 px per frame
// time): knots every two bands left the slow axes' band-to-band wander to
// the curvature penalty. Measured there over seeds 1-5 and 11, the 8 cases
// in several directions: per-line drift error down in 47 of 48 runs (by
// 0.001-0.011 px; +0.0005 px once), jitter error within +0.0004 px or down
// (to -0.0024 px); one knot a band did about half as well, four a band
// (64 a frame) raised the jitter-0.5 cases' jitter error by 0.005-0.008 px.
double ScanDistortionSteps::path_knot_spacing() const {
  const double bands = static_cast<double>(bands_.size());
  return choose_knot_spacing(timing_.frame_time(), several_directions() ? 4.0 * bands : bands);
}

bool ScanDistortionSteps::several_directions() const {
  for (std::size_t k = 1; k < frames_; ++k) {
    const Point a = timing_.fast_axis(k), b = timing_.fast_axis(0);
    if (std::fabs(a.x - b.x) + std::fabs(a.y - b.y) > 1e-9) return true;
  }
  return false;
}

bool ScanDistortionSteps::halves_steps() const {
  return frames_ - static_cast<std::size_t>(std::count(left_out_.begin(), left_out_.end(), 1)) == 2;
}

DriftPath ScanDistortionSteps::halfway(const DriftPath& fitted, const DriftPath& previous) const {
  std::vector<DriftSample> mean;
  for (std::size_t k = 0; k < frames_; ++k)
    for (int l = 0; l < timing_.lines(); ++l) {
      const double t = timing_.line_mid_time(k, l);
      const Point a = fitted.at(t), b = previous.at(t);
      mean.push_back({t, 0.5 * (a.x + b.x), 0.5 * (a.y + b.y), 1.0});
    }
  DriftPathSettings ps;
  ps.knot_spacing = path_knot_spacing();
  ps.smoothing = 1e-6;  // through the mean (it is smooth already)
  return to_gauge(DriftPath::fit(std::move(mean), 0.0, t_end(), ps), timing_);
}

DriftPathUncertainty ScanDistortionSteps::path_uncertainty(const std::vector<DriftSample>& samples) const {
  if (samples.size() < 2) return {};
  const double knots = path_knot_spacing();
  DriftPathSettings ps;  // as fit_path chose them
  ps.knot_spacing = knots;
  ps.smoothing = settings_.smoothing;
  if (!(settings_.smoothing > 0.0))
    ps = cross_validated_smoothing(samples, 0.0, t_end(), knots, {0.0125, 0.05, 0.2, 0.8, 3.2, 12.8, 51.2});
  const auto lines = static_cast<std::size_t>(timing_.lines());
  // Frames in several directions: the white part along each frame's own axes.
  const bool several = several_directions();
  std::function<Point(double)> fast_axis;
  if (several)
    fast_axis = [this](double t) {
      const double k = std::floor(t / timing_.frame_time());
      return timing_.fast_axis(static_cast<std::size_t>(std::clamp(k, 0.0, static_cast<double>(frames_ - 1))));
    };
  return DriftPathUncertainty::of(
      samples, 0.0, t_end(), ps, frames_ * lines,
      [&](std::size_t i) { return timing_.line_mid_time(i / lines, static_cast<int>(i % lines)); }, fast_axis,
      !several && halves_steps() ? timing_.fast_axis(0) : Point{});
}

DriftPathUncertainty ScanDistortionSteps::path_uncertainty_if_any(const std::vector<DriftSample>& samples) const {
  try {
    return path_uncertainty(samples);
  } catch (const Error&) {
    return {};  // fit_path fitted these samples: not expected; the jitter's sigma without it then
  }
}

void ScanDistortionSteps::set_template(SpecimenImage average, const DriftPath& built_with, AverageNoise noise,
                                       std::vector<FrameContribution> own, std::size_t own_first) {
  own_ = std::move(own);
  own_first_ = own_first;
  auto t = std::make_shared<Template>();
  t->average = std::move(average);
  t->path = built_with;
  if (settings_.filter_template && noise.even > 0 && noise.odd > 0)
    t->filter = std::make_shared<TemplateWienerFilter>(t->average.image, noise.half_difference, noise.even, noise.odd,
                                                       settings_.template_filter_noise_scale);
  noise = {};  // the filter has what it needs of the noise
  // The fits sample leave-one-out templates (template_without). With a
  // filter, theirs are these coefficients plus those of each frame's
  // difference; without one, the whole average's serve only a series of
  // one frame (at 4096^2 a prefilter of the grid each round, for nothing).
  if (frames_ < 2 || t->filter) {
    t->coeffs = t->average.image;
    if (t->filter) t->filter->apply(t->coeffs);
    bspline_prefilter(t->coeffs);
  }
  t->image = &t->average;
  t->min_coverage = std::max(1.0, 0.25 * static_cast<double>(frames_));
  double sum = 0.0, covered = 0.0;
  for (std::size_t i = 0; i < t->average.image.pixels.size(); ++i)
    if (t->average.coverage.pixels[i] >= t->min_coverage) sum += t->average.image.pixels[i], covered += 1.0;
  t->level = covered > 0 ? sum / covered : 0.0;
  // A line is fitted wherever another frame saw its specimen: frame 0's
  // first lines and the last frames' last ones (which the drift carries off
  // the other frames) were left at jitter 0 under the band fits' threshold
  // (a revolving dose-4 series: 10 of frame 0's first 16 lines), their
  // template's larger noise weighed in (at_for_lines). Not with a line
  // field: its template leaves out every line's first samples, and the fused
  // average of bench_scan_distortion's line-field case was 0.1-1.6 points
  // further from the oracle with it.
  t->line_min_coverage = field_basis_.empty() ? 1.0 : t->min_coverage;
  template_ = std::move(t);
}

std::shared_ptr<const ScanDistortionSteps::Template> ScanDistortionSteps::template_without(
    const Frame& frame, std::size_t k, const std::vector<double>& jitter, const std::vector<double>& field) const {
  if (frames_ < 2) return template_;  // nothing else to compare against
  const SpecimenImage& full = template_->average;
  const SpecimenGrid grid{full.origin, full.image.width, full.image.height};
  // The frame's own samples: kept from the average's pass (the same model),
  // in memory or spilled, else sampled again.
  FrameContribution sampled;
  const std::size_t at = k - own_first_;
  const bool listed = k >= own_first_ && at < own_.size();
  const bool kept = listed && !own_[at].value.empty();
  if (!kept && listed) sampled = own_[at].read_back();
  if (!kept && sampled.value.empty())
    sampled = sample_in_specimen_coordinates(frame, FrameScanMap(timing_, template_->path, jitter, k, field), grid,
                                             template_from_sample());
  const FrameContribution& own = kept ? own_[at] : sampled;
  auto t = std::make_shared<Template>();
  t->average.origin = full.origin;
  t->average.coverage = full.coverage;
  t->path = template_->path;
  t->filter = template_->filter;
  // The leave-one-out image is the whole average plus D = (A - v) / (c - 1)
  // on the frame's footprint (A the average, v the frame's sample, c the
  // coverage). With a filter, filter and prefilter are linear: the
  // coefficients are the round's (set_template) plus those of D, one
  // transform pair and no prefilter of the grid per frame (the prefilter of
  // D in the spectrum, periodic: TemplateWienerFilter::add_filtered_coefficients).
  // Without one, the image itself, made in place of its coefficients (no
  // third grid-sized copy).
  const bool by_difference = static_cast<bool>(template_->filter);
  if (by_difference) t->coeffs = Frame(grid.width, grid.height, 0.0f);
  else t->coeffs = full.image;
#pragma omp parallel for schedule(static)
  for (int j = 0; j < own.height; ++j)
    for (int i = 0; i < own.width; ++i) {
      const float v = own.value[static_cast<std::size_t>(j) * static_cast<std::size_t>(own.width) + i];
      if (std::isnan(v)) continue;
      const std::size_t g = static_cast<std::size_t>(own.j0 + j) * static_cast<std::size_t>(grid.width) + own.i0 + i;
      const double c = full.coverage.pixels[g];
      t->average.coverage.pixels[g] = static_cast<float>(std::max(0.0, c - 1.0));
      if (!(c > 1.0)) continue;
      const double a = full.image.pixels[g];
      t->coeffs.pixels[g] = static_cast<float>(by_difference ? (a - v) / (c - 1.0) : (a * c - v) / (c - 1.0));
    }
  if (by_difference) {
    template_->filter->add_filtered_coefficients(t->coeffs, template_->coeffs);
  } else {
    bspline_prefilter(t->coeffs);
  }
  t->image = &t->average;
  t->min_coverage = template_->min_coverage;
  t->line_min_coverage = template_->line_min_coverage;
  t->level = template_->level;
  return t;
}

namespace {

// A line's weighted sums for the line field's normal equations, over its
// samples up to `reach` (twice the field's extent: beyond, a sample says
// nothing of the field and little more of the line's shift): the residual
// against the template at the line's fitted offset `j`. Each sample is
// weighed by the template's share of the noise too: a template of c frames
// (frame k's own taken out) adds 1 / c of a frame's noise variance, so where
// few others saw the specimen clear of their line starts a sample says less.
// Where none did, it says nothing.
template <class Taps, class Template>
FieldSums line_field_sums(const LineFieldBasis& basis, const ScanTiming& timing, const Template& tpl,
                          const LineNoiseModel& noise, const Frame& frame, double field_reach,
                          const std::vector<std::pair<int, int>>& pixels, const std::vector<Point>& q, double j,
                          Point fast) {
  const int n = basis.knots();
  FieldSums out_sums(n);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const double sample = timing.sample_of(pixels[i].first, pixels[i].second);
    if (sample >= field_reach) continue;
    double v, gx, gy, c;
    if (!tpl.template covered_at<Taps>({q[i].x + j * fast.x, q[i].y + j * fast.y}, v, gx, gy, c)) continue;
    const double g = gx * fast.x + gy * fast.y;
    const double w = noise.weight(v) * c / (c + 1.0);
    const double e = frame.at(pixels[i].first, pixels[i].second) - v;
    double b[4];
    const int m0 = basis.weights(sample, b);
    out_sums.nuisance[0] += w, out_sums.nuisance[1] += w * g, out_sums.nuisance[2] += w * g * g;
    out_sums.nuisance_rhs[0] += w * e, out_sums.nuisance_rhs[1] += w * g * e;
    for (int a = 0; a < 4; ++a) {
      if (b[a] == 0.0) continue;  // beyond the field's extent (its index may be too)
      const std::size_t m = static_cast<std::size_t>(m0) + static_cast<std::size_t>(a);
      const double xa = g * b[a];
      out_sums.s[m] += w * xa, out_sums.sg[m] += w * xa * g, out_sums.q[m] += w * xa * e;
      for (int d = 0; d < 4; ++d)
        if (b[d] != 0.0)
          out_sums.band(m, static_cast<std::size_t>(m0) + static_cast<std::size_t>(d)) += w * xa * g * b[d];
    }
  }
  return out_sums;
}

// The fits' per-band and per-line work, built for AVX2 + FMA: the same
// bodies with the FMA taps, what they call inlined (flatten) so that the
// loops are compiled for the target.
template <class... A>
[[gnu::flatten]] DRIFTSCAN_AVX2_TARGET BandFit fit_band_avx2(A&&... a) {
  return fit_band<FmaTaps>(std::forward<A>(a)...);
}
template <class... A>
[[gnu::flatten]] DRIFTSCAN_AVX2_TARGET double fit_line_jitter_avx2(A&&... a) {
  return fit_line_jitter<FmaTaps>(std::forward<A>(a)...);
}
template <class... A>
[[gnu::flatten]] DRIFTSCAN_AVX2_TARGET FieldSums line_field_sums_avx2(A&&... a) {
  return line_field_sums<FmaTaps>(std::forward<A>(a)...);
}

// Each line's whole fast-axis offset from the template's path (its band's
// share `placed` and its own fit `raw`; finish_jitter() takes the new path's
// share out) and its variance: the inverse information scaled by the
// estimates' spread between the two halves of every line (in line order: the
// same sum for any thread count); the noise model's (1: the fits are weighted
// by its inverse variance) is its floor.
template <class Fit>
void set_line_offsets(Fit& out, const std::vector<double>& raw, const std::vector<double>& information,
                      const std::vector<double>& split, const std::vector<Point>& placed, Point fast) {
  double spread_sum = 0.0, inverse_sum = 0.0;
  for (std::size_t l = 0; l < raw.size(); ++l) spread_sum += split[2 * l], inverse_sum += split[2 * l + 1];
  const double scale = inverse_sum > 0 ? std::max(1.0, spread_sum / inverse_sum) : 1.0;
  out.line_offset.resize(raw.size());
  out.line_variance.resize(raw.size());
  for (std::size_t l = 0; l < raw.size(); ++l) {
    out.line_offset[l] = placed[l].x * fast.x + placed[l].y * fast.y + raw[l];
    out.line_variance[l] = information[l] > 0 ? scale / information[l] : std::numeric_limits<double>::infinity();
    if (std::isfinite(out.line_variance[l])) out.precision_sum += out.line_variance[l], out.precision_count += 1;
  }
}

// A line's offset from the model as its frame's registered bands say: theirs
// linearly interpolated between their centre lines (constant beyond the
// first and last; none when no band registered).
class BandOffsets {
 public:
  void add(double centre_line, Point offset) { centre_.push_back(centre_line), offset_.push_back(offset); }
  Point at(int line) const {
    if (centre_.empty()) return {};
    const double l = line;
    if (l <= centre_.front()) return offset_.front();
    if (l >= centre_.back()) return offset_.back();
    const auto i = static_cast<std::size_t>(std::upper_bound(centre_.begin(), centre_.end(), l) - centre_.begin());
    const double w = (l - centre_[i - 1]) / (centre_[i] - centre_[i - 1]);
    return {offset_[i - 1].x + w * (offset_[i].x - offset_[i - 1].x),
            offset_[i - 1].y + w * (offset_[i].y - offset_[i - 1].y)};
  }

 private:
  std::vector<double> centre_;
  std::vector<Point> offset_;
};

// The change of the line field: least squares over every line of the frame
// (in line order: the same sums for any thread count), each line's intensity
// offset and shift fitted with it (the shift is the line's jitter: the field
// is what the line's start does apart from it). Left empty below 4 lines.
void set_field_normals(const std::vector<FieldSums>& field_sums, std::size_t knots,
                       ScanDistortionSteps::FrameFit& out) {
  std::vector<double> a(knots * knots, 0.0), b(knots, 0.0);
  int used = 0;
  for (const FieldSums& f : field_sums)
    if (f.add_to(a, b)) ++used;
  if (used >= 4) out.field_normal = std::move(a), out.field_rhs = std::move(b);
}

}  // namespace

ScanDistortionSteps::FrameFit ScanDistortionSteps::fit_frame(const Frame& frame, std::size_t k,
                                                             const ScanModel& model) const {
  if (!template_) throw failure("scan distortion: fit_frame before set_template");
  if (left_out(k)) return {};
  const std::vector<double>& current = k < model.jitter.size() ? model.jitter[k] : no_jitter;
  const std::vector<double>& coefficients = k < model.field.size() ? model.field[k] : no_jitter;
  const std::vector<double> field = field_basis_.tabulate(coefficients);
  const auto tpl = template_without(frame, k, current, field);
  FrameFit out;
  const bool avx2 = simd_level() == SimdLevel::avx2;
  std::vector<BandFit> fits(bands_.size());
  {
    const FrameScanMap map(timing_, model.path, current, k, field);
#pragma omp parallel for schedule(dynamic, 1)
    for (long b = 0; b < static_cast<long>(bands_.size()); ++b) {
      const auto at = static_cast<std::size_t>(b);
      const double t = timing_.frame_start(k) + band_time_[at];
      fits[at] =
          avx2 ? fit_band_avx2(frame, bands_[at], t, map, *tpl, settings_.max_band_offset, timing_.fast_axis(k))
               : fit_band<Sse2Taps>(frame, bands_[at], t, map, *tpl, settings_.max_band_offset, timing_.fast_axis(k));
    }
  }
  BandOffsets band_offset;  // each band's offset from the model at its centre line, for the lines
  double noise_sums[5] = {};
  for (std::size_t b = 0; b < fits.size(); ++b) {
    const BandFit& f = fits[b];
    if (!f.ok) continue;
    for (int m = 0; m < 5; ++m) noise_sums[m] += f.noise_sums[m];
    out.bands.push_back({f.t, f.mean_path.x + f.delta.x, f.mean_path.y + f.delta.y, f.weight});
    out.band_count += 1;
    if (f.explains) out.explained_count += 1;
    band_offset.add(0.5 * (band_lines_[b].first + band_lines_[b].second - 1), f.delta);
  }
  if (!settings_.estimate_jitter) return out;

  // The noise model's floor from where the frame's bands sampled the template
  // last (its brightness and gradient at every pixel).
  IntensityBins brightness(tpl->level);
  for (const BandFit& f : fits)
    if (f.ok)
      for (std::size_t i = 0; i < f.value.size(); ++i)
        if (!std::isnan(f.value[i])) brightness.add(f.value[i], f.gradient[i]);
  const LineNoiseModel noise_model = LineNoiseModel::fit(noise_sums, &brightness);
  // Lines without their jitter (the unknown); the fits start from the current one.
  const FrameScanMap map(timing_, model.path, no_jitter, k, field);
  std::vector<double> jitter = current;
  jitter.resize(static_cast<std::size_t>(timing_.lines()), 0.0);
  const Point fast = timing_.fast_axis(k);  // in frame 0's orientation, where the template is
  // Each line's least-squares jitter (about the unshrunk estimate of the
  // previous round) and its variance.
  std::vector<double> raw(jitter.size()), information(jitter.size()), split(2 * jitter.size());
  std::vector<Point> placed(jitter.size());  // each line's offset from the model where it was fitted
  std::vector<FieldSums> field_sums(field_basis_.empty() ? 0 : jitter.size());
  const double field_reach =
      field_basis_.empty() ? 0.0 : std::min<double>(timing_.samples_per_line(), 2.0 * field_basis_.extent() + 4.0);
#pragma omp parallel for schedule(dynamic, 8)
  for (int l = 0; l < timing_.lines(); ++l) {
    const std::size_t at = static_cast<std::size_t>(l);
    const auto& pixels = lines_[at];
    // A line of a registered band is placed where the band's last step
    // sampled the template, and takes its first step from those samples
    // (measured: 2 of the 6.7 template samples a pixel took in a run's fits
    // saved, the jitter errors unchanged to 0.001 px); the others between
    // their neighbours'.
    const auto [b, first] = line_in_band_[at];
    const BandFit& f = fits[b];
    const bool reuse = f.ok && f.value.size() == bands_[b].size();
    // Pixels the band left out (below its coverage threshold, which is the
    // line fit's or higher) are sampled by the line's first step itself:
    // where the line fit's lower threshold keeps them, they count. Dropping
    // the band's samples for the whole line instead had the lines of most
    // frames, whose ends drift past the template's well-covered region,
    // sample the template once more at every pixel (measured on 8 x 2048^2:
    // 0.55 of the second round's pixels, 2 of the first round's).
    bool gaps = false;
    if (reuse)
      for (std::size_t i = 0; i < pixels.size() && !gaps; ++i) gaps = std::isnan(f.value[first + i]);
    const Point d = reuse ? f.evaluated_at : band_offset.at(l);
    placed[at] = d;
    // The points the line shows: for the template samples of a step that
    // does not reuse the band's, for the band's gaps, and for the line
    // field. One step from the band's samples (a later round's) samples
    // only its gaps.
    std::vector<Point> q;
    if (!reuse || gaps || jitter[at] == 0.0 || !field_basis_.empty()) {
      q.resize(pixels.size());
      for (std::size_t i = 0; i < pixels.size(); ++i) {
        const Point p = map.probed(pixels[i].first, pixels[i].second);
        q[i] = {p.x + d.x, p.y + d.y};
      }
    }
    const float* first_value = reuse ? f.value.data() + first : nullptr;
    const float* first_gradient = reuse ? f.gradient.data() + first : nullptr;
    raw[at] =
        avx2 ? fit_line_jitter_avx2(frame, pixels, q, fast, *tpl, noise_model, jitter[at], settings_.max_jitter,
                                    information[at], &split[2 * at], first_value, first_gradient)
             : fit_line_jitter<Sse2Taps>(frame, pixels, q, fast, *tpl, noise_model, jitter[at], settings_.max_jitter,
                                         information[at], &split[2 * at], first_value, first_gradient);
    if (!field_basis_.empty())
      field_sums[at] = avx2 ? line_field_sums_avx2(field_basis_, timing_, *tpl, noise_model, frame, field_reach, pixels,
                                                   q, raw[at], fast)
                            : line_field_sums<Sse2Taps>(field_basis_, timing_, *tpl, noise_model, frame, field_reach,
                                                        pixels, q, raw[at], fast);
  }
  if (!field_basis_.empty()) set_field_normals(field_sums, static_cast<std::size_t>(field_basis_.knots()), out);
  set_line_offsets(out, raw, information, split, placed, fast);
  return out;
}

namespace {

// A line's jitter standard error: the error of the shrinkage as applied,
// gain (offset) with gain = tau2 / (tau2 + v) from the frame's estimate
// tau2, when the true jitter variance may be up to `hi`: (1 - gain)^2 hi of
// jitter shrunk away, gain^2 (v + u) of the line's noise and of the path's
// error along the fast axis (variance u), which the offset holds as if it
// were jitter. u is the path's whole sigma at the line's time, its fit's as
// well as the drift it leaves unresolved: the jitter is the offset less the
// path, so the path's error is the jitter's. With the unresolved drift alone
// the jitter z-RMS read up to 1.39 on bench_scan_distortion (the lone
// orthogonal pair, whose path is least determined), 18-23 of 24 cases in
// range at seeds 1, 2, 3, 11; with the whole sigma 22-23 of 24. With tau2 = hi
// it is the posterior's gain v + gain^2 u; a frame whose tau2 reads ~0 (its
// jitter shrunk away) keeps hi.
double jitter_standard_error(double tau2, double hi, double v, double u) {
  if (!(hi + v > 0)) return 0.0;
  const double gain = tau2 > 0 ? tau2 / (tau2 + v) : 0.0;
  return std::sqrt((1.0 - gain) * (1.0 - gain) * hi + gain * gain * (v + u));
}

}  // namespace

ScanDistortionSteps::JitterSpread ScanDistortionSteps::jitter_spread(const FrameFit& fit, std::size_t k,
                                                                     const DriftPath& before,
                                                                     const DriftPath& after) const {
  JitterSpread out;
  const std::size_t lines = static_cast<std::size_t>(timing_.lines());
  if (fit.line_offset.size() != lines) return out;
  const std::vector<double> u = unexplained_offsets(fit, k, before, after);
  double mean = 0.0;
  for (std::size_t l = 0; l < lines; ++l)
    if (std::isfinite(fit.line_variance[l])) mean += u[l], out.count += 1;
  if (out.count == 0) return out;
  mean /= out.count;
  for (std::size_t l = 0; l < lines; ++l)
    if (std::isfinite(fit.line_variance[l]))
      out.spread += (u[l] - mean) * (u[l] - mean), out.noise += fit.line_variance[l];
  return out;
}

std::vector<double> ScanDistortionSteps::unexplained_offsets(const FrameFit& fit, std::size_t k,
                                                             const DriftPath& before, const DriftPath& after) const {
  // What the new path does not explain of each line's offset.
  const Point fast = timing_.fast_axis(k);
  std::vector<double> u(fit.line_offset.size());
  for (std::size_t l = 0; l < u.size(); ++l) {
    const double t = timing_.line_mid_time(k, static_cast<int>(l));
    const Point a = after.at(t), b = before.at(t);
    u[l] = fit.line_offset[l] - ((a.x - b.x) * fast.x + (a.y - b.y) * fast.y);
  }
  return u;
}

std::vector<double> ScanDistortionSteps::pooled_jitter_variances(const std::vector<JitterSpread>& frames) const {
  const double top = settings_.jitter_prior * settings_.jitter_prior;
  std::vector<double> out(frames.size(), -1.0);  // -1: no lines (finish_jitter has nothing to shrink)
  double excess = 0.0, count = 0.0;
  for (const JitterSpread& f : frames) excess += f.spread - f.noise, count += f.count;
  if (!(count > 0)) return out;
  const double pooled = std::clamp(excess / count, 0.0, top);
  // Each frame's estimate t_k = (spread - noise) / count and its sampling
  // variance 2 (tau^2 + mean v)^2 / count (a sum of count squares); the
  // frames' true variances scatter by what t_k scatter beyond that.
  double scatter = 0.0, sampling = 0.0, used = 0.0;
  std::vector<double> own(frames.size()), own_var(frames.size());
  for (std::size_t k = 0; k < frames.size(); ++k) {
    const JitterSpread& f = frames[k];
    if (!(f.count > 1)) continue;
    own[k] = (f.spread - f.noise) / f.count;
    own_var[k] = 2.0 * std::pow(pooled + f.noise / f.count, 2) / f.count;
    scatter += (own[k] - pooled) * (own[k] - pooled), sampling += own_var[k], used += 1;
  }
  const double between = used > 1 ? std::max(0.0, (scatter - sampling) / used) : 0.0;
  for (std::size_t k = 0; k < frames.size(); ++k) {
    if (!(frames[k].count > 0)) continue;
    const double weight = frames[k].count > 1 && between > 0 ? between / (between + own_var[k]) : 0.0;
    out[k] = std::clamp(pooled + weight * (own[k] - pooled), 0.0, top);
  }
  return out;
}

std::vector<double> ScanDistortionSteps::finish_jitter(const FrameFit& fit, std::size_t k, const DriftPath& before,
                                                       const DriftPath& after, std::vector<double>* sigma,
                                                       const DriftPathUncertainty* path_sigma,
                                                       double pooled_tau2) const {
  const std::size_t lines = static_cast<std::size_t>(timing_.lines());
  std::vector<double> jitter(lines, 0.0);
  if (sigma) sigma->assign(lines, settings_.jitter_prior);  // no fit: the prior's
  if (fit.line_offset.size() != lines) return jitter;
  // What the new path does not explain of each line's offset. Its frame
  // mean is the gauge between the two (the path's constant shift), not
  // jitter.
  const Point fast = timing_.fast_axis(k);
  const std::vector<double> u = unexplained_offsets(fit, k, before, after);
  const JitterSpread spread = jitter_spread(fit, k, before, after);
  const double count = spread.count;
  if (count == 0) return jitter;
  double mean = 0.0;
  for (std::size_t l = 0; l < lines; ++l)
    if (std::isfinite(fit.line_variance[l])) mean += u[l];
  mean /= count;
  // Shrinkage with the jitter's variance estimated from the data (empirical
  // Bayes): the spread of the offsets minus what their noise explains, the
  // frame's own or pooled over the series. A series without jitter gets ~0,
  // not noise fitted as jitter; the prior setting only bounds it.
  const double tau2 = pooled_tau2 >= 0.0 ? pooled_tau2
                                         : std::clamp((spread.spread - spread.noise) / count, 0.0,
                                                      settings_.jitter_prior * settings_.jitter_prior);
  const double noise_part = spread.noise;
  if (sigma) {
    // tau^2 is itself estimated from the frame's lines: its upper bound (two
    // standard errors, (2 / lines)^1/2 (tau^2 + mean v) each) in the
    // posterior, or a frame whose jitter looked like noise alone would claim
    // its lines exactly 0.
    const double hi = std::min(settings_.jitter_prior * settings_.jitter_prior,
                               tau2 + 2.0 * std::sqrt(2.0 / count) * (tau2 + noise_part / count));
    const bool with_path = path_sigma && !path_sigma->empty();
    for (std::size_t l = 0; l < lines; ++l) {
      double u = 0.0;
      if (with_path) {
        const Point p = path_sigma->sigma(timing_.line_mid_time(k, static_cast<int>(l)));
        u = std::pow(p.x * fast.x, 2) + std::pow(p.y * fast.y, 2);
      }
      (*sigma)[l] = std::isfinite(fit.line_variance[l]) && hi + fit.line_variance[l] > 0
                        ? jitter_standard_error(tau2, hi, fit.line_variance[l], u)
                        : std::sqrt(hi);
    }
  }
  for (std::size_t l = 0; l < lines; ++l)
    if (std::isfinite(fit.line_variance[l]) && tau2 > 0)
      jitter[l] =
          std::clamp((u[l] - mean) * tau2 / (tau2 + fit.line_variance[l]), -settings_.max_jitter, settings_.max_jitter);
  return jitter;
}

namespace {

// A frame's line-field equations, from its fit and current coefficients:
// A, y = A current + b (A c = y: the coefficients the data alone ask for),
// and the Cholesky factor of A + lambda I (lambda: the deviation's prior
// precision). False if the frame has none.
struct FrameFieldEquations {
  std::vector<double> a, y, factor;
  bool set(const ScanDistortionSteps::FrameFit& fit, const std::vector<double>& current, std::size_t n, double lambda) {
    if (fit.field_normal.size() != n * n || fit.field_rhs.size() != n) return false;
    a = fit.field_normal;
    y = fit.field_rhs;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n && j < current.size(); ++j) y[i] += a[i * n + j] * current[j];
    factor = a;
    for (std::size_t i = 0; i < n; ++i) factor[i * n + i] += lambda;
    return cholesky(factor, n);
  }
};

}  // namespace

// With deviations e_k ~ N(0, tau^2) about the shared field g, and for a
// frame M = (A + I / tau^2)^-1: the shared field's equations, the e_k
// eliminated, are (sum M A / tau^2 + prior) g = sum M y / tau^2; then
// e_k = M (y - A g).
void ScanDistortionSteps::finish_fields(const std::vector<FrameFit>& fits, std::size_t first, ScanModel& model,
                                        const std::function<void(std::vector<double>&)>& sum_over_ranks) const {
  if (field_basis_.empty()) return;
  const std::size_t n = static_cast<std::size_t>(field_basis_.knots());
  const double lambda = 1.0 / (settings_.line_field_prior * settings_.line_field_prior);
  model.field_basis = field_basis_;
  model.field.resize(frames_);
  for (std::size_t i = 0; i < fits.size(); ++i) model.field[first + i].resize(n, 0.0);
  // The shared field's equations: n x n, then n (one block, for one reduction).
  std::vector<double> pool(n * n + n, 0.0), column(n);
  FrameFieldEquations eq;
  for (std::size_t i = 0; i < fits.size(); ++i) {
    if (!eq.set(fits[i], model.field[first + i], n, lambda)) continue;
    for (std::size_t j = 0; j <= n; ++j) {  // M times A's column j, then M y
      for (std::size_t r = 0; r < n; ++r) column[r] = j < n ? eq.a[r * n + j] : eq.y[r];
      cholesky_solve(eq.factor, n, column.data());
      for (std::size_t r = 0; r < n; ++r) pool[j < n ? r * n + j : n * n + r] += lambda * column[r];
    }
  }
  if (sum_over_ranks) sum_over_ranks(pool);
  std::vector<double> a(pool.begin(), pool.begin() + static_cast<long>(n * n));
  std::vector<double> shared(pool.begin() + static_cast<long>(n * n), pool.end());
  // A prior on the shared field (1 px), so that where no frame could be
  // measured (a line's first samples, when the drift never carried the
  // specimen they show past every frame's line starts) it stays near none.
  for (std::size_t r = 0; r < n; ++r) a[r * n + r] += 1.0;
  if (!solve_spd(a, shared)) shared.assign(n, 0.0);
  for (std::size_t i = 0; i < fits.size(); ++i) {
    std::vector<double>& field = model.field[first + i];
    const bool measured = eq.set(fits[i], field, n, lambda);
    field = shared;
    if (!measured) continue;  // nothing of its own: the shared field
    std::vector<double> e = eq.y;
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t c = 0; c < n; ++c) e[r] -= eq.a[r * n + c] * shared[c];
    cholesky_solve(eq.factor, n, e.data());
    for (std::size_t r = 0; r < n; ++r) field[r] += e[r];
  }
}

std::vector<ScanDistortionSteps::FrameFit> ScanDistortionSteps::fit_frames(
    const std::vector<std::shared_ptr<const Frame>>& frames, std::size_t first, const ScanModel& model) const {
  static const Frame none;  // a left-out frame's (fit_frame reads nothing of it)
  std::vector<FrameFit> fits(frames.size());
  std::vector<std::exception_ptr> failures(frames.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (long i = 0; i < static_cast<long>(frames.size()); ++i) {
    const std::size_t at = static_cast<std::size_t>(i);
    try {
      fits[at] = fit_frame(frames[at] ? *frames[at] : none, first + at, model);
    } catch (...) {
      failures[at] = std::current_exception();  // an exception must not leave the parallel region
    }
  }
  for (const std::exception_ptr& f : failures)
    if (f) std::rethrow_exception(f);
  return fits;
}

double ScanDistortionSteps::path_change(const DriftPath& a, const DriftPath& b) const {
  double change = 0.0;
  for (std::size_t k = 0; k < frames_; ++k)
    for (int l = 0; l < timing_.lines(); ++l) {
      const double t = timing_.line_mid_time(k, l);
      const Point pa = a.at(t), pb = b.at(t);
      change = std::max(change, std::hypot(pa.x - pb.x, pa.y - pb.y));
    }
  return change;
}

int line_field_unseen_samples(const ScanTiming& timing, const ScanDistortionSettings& settings,
                              const std::vector<Point>& rigid_drift, const std::vector<std::size_t>& left_out) {
  // Frames in other directions see each line's start along their slow axis.
  if (settings.line_field_knots <= 0 || rigid_drift.empty() || timing.turned()) return 0;
  const double extent = settings.line_field_extent * timing.samples_per_line();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t k = 0; k < rigid_drift.size(); ++k) {
    if (std::find(left_out.begin(), left_out.end(), k) != left_out.end()) continue;
    const Point fast = timing.fast_axis(k);
    const double along = rigid_drift[k].x * fast.x + rigid_drift[k].y * fast.y;
    lo = std::min(lo, along), hi = std::max(hi, along);
  }
  if (!(hi >= lo)) return 0;
  const double unseen = std::min(extent, extent + kLineFieldTemplateMargin - (hi - lo));
  return unseen > 0 ? static_cast<int>(std::ceil(unseen)) : 0;
}

ScanDistortionResult estimate_scan_distortion(const FrameSource& frames, const ScanTiming& timing,
                                              const std::vector<Point>& rigid_drift,
                                              const ScanDistortionSettings& settings,
                                              const std::vector<std::size_t>& leave_out) {
  const std::size_t n = frames.frame_count();
  if (n >= 1 && (frames.width() != timing.width() || frames.height() != timing.height()))
    throw bad_input("scan distortion: the scan timing is for " + std::to_string(timing.width()) + "x" +
                    std::to_string(timing.height()) + " frames, the series has " + std::to_string(frames.width()) +
                    "x" + std::to_string(frames.height()));
  ScanDistortionSteps steps(timing, settings, n);
  for (const std::size_t k : leave_out)
    if (k < n) steps.leave_out(k);
  ScanDistortionResult result;
  ScanModel& model = result.model;
  model = steps.initial_model(rigid_drift);
  // One round of `frames` (scanned with `on`) against their average under
  // `m`, with `st`'s steps.
  auto run_round = [&](const FrameSource& frames_of, const ScanTiming& on, ScanDistortionSteps& st, ScanModel& m) {
    const auto started = std::chrono::steady_clock::now();
    AverageNoise noise;
    std::vector<FrameContribution> own;
    SpecimenImage average = average_in_specimen_coordinates(frames_of, on, m, &noise, &own, &st.left_out_frames(),
                                                            st.template_from_sample());
    st.set_template(std::move(average), m.path, std::move(noise), std::move(own));
    std::vector<DriftSample> samples;
    double precision[2] = {0.0, 0.0};
    std::vector<ScanDistortionSteps::FrameFit> lines(n);  // each frame's line offsets, for its next jitter
    const std::size_t batch = 2 * static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
    for (std::size_t k0 = 0; k0 < n; k0 += batch) {
      std::vector<std::shared_ptr<const Frame>> held;
      for (std::size_t k = k0; k < std::min(n, k0 + batch); ++k)
        held.push_back(st.left_out(k) ? nullptr : frames_of.shared_frame(k));
      std::vector<ScanDistortionSteps::FrameFit> fits = st.fit_frames(held, k0, m);
      for (std::size_t i = 0; i < fits.size(); ++i) {
        if (st.leave_out_unless_followed(k0 + i, fits[i])) result.not_followed.push_back(k0 + i);
        samples.insert(samples.end(), fits[i].bands.begin(), fits[i].bands.end());
        precision[0] += fits[i].precision_sum, precision[1] += fits[i].precision_count;
        fits[i].bands.clear(), fits[i].bands.shrink_to_fit();
        lines[k0 + i] = std::move(fits[i]);
      }
    }
    st.drop_template();
    const DriftPath previous = m.path;
    m.path = st.fit_path(samples);
    if (settings.estimate_jitter) {
      const DriftPathUncertainty path_sigma = st.path_uncertainty_if_any(samples);
      std::vector<ScanDistortionSteps::JitterSpread> spreads(n);
      for (std::size_t k = 0; k < n; ++k) spreads[k] = st.jitter_spread(lines[k], k, previous, m.path);
      const std::vector<double> tau2 = st.pooled_jitter_variances(spreads);
      result.jitter_sigma.resize(n);
      for (std::size_t k = 0; k < n; ++k)
        m.jitter[k] = st.finish_jitter(lines[k], k, previous, m.path, &result.jitter_sigma[k], &path_sigma, tau2[k]);
    }
    // The jitter is what the round's own path leaves of the lines' offsets;
    // only the path is taken halfway (halving the jitter as well slowed the
    // orthogonal pair, whose frames pin each other's jitter).
    if (st.halves_steps()) m.path = st.halfway(m.path, previous);
    st.finish_fields(lines, 0, m);
    if (settings.estimate_jitter)
      result.jitter_precision_px = precision[1] > 0 ? std::sqrt(precision[0] / precision[1]) : 0.0;
    ScanDistortionRound r;
    r.path_change = st.path_change(m.path, previous);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result.rounds.push_back(r);
    result.band_samples = std::move(samples);
    return r;
  };
  int round = 0;
  const int rounds = settings.rounds_for(timing);
  if (FastAxisBinning::applies(timing, settings)) {
    const FastAxisBinning binning(timing);
    const FastAxisBinnedFrames binned_frames(frames);
    ScanDistortionSteps binned_steps(binning.timing(), binning.settings(settings), n);
    for (std::size_t k = 0; k < n; ++k)
      if (steps.left_out(k)) binned_steps.leave_out(k);
    ScanModel binned_model = binning.binned(model);
    run_round(binned_frames, binning.timing(), binned_steps, binned_model);
    const DriftPath start = model.path;
    model = binning.unbinned(binned_model);
    result.rounds.back().path_change = steps.path_change(model.path, start);  // in full-resolution pixels
    for (std::size_t k = 0; k < n; ++k)
      if (binned_steps.left_out(k)) steps.leave_out(k);
    ++round;
  }
  for (; round < rounds; ++round) {
    const ScanDistortionRound r = run_round(frames, timing, steps, model);
    if (round >= 1 && r.path_change < settings.tolerance) {
      result.converged = true;
      break;
    }
  }
  result.average = average_in_specimen_coordinates(frames, timing, model, nullptr, nullptr, &steps.left_out_frames());
  result.path_sigma = steps.path_uncertainty(result.band_samples);
  for (std::size_t k = 0; k < n; ++k)
    if (steps.left_out(k)) result.left_out.push_back(k);
  return result;
}

}  // namespace driftscan
