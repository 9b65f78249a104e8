#include "driftscan/scan_distortion/drift_path.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>
#include <vector>

#include "driftscan/core/cubic_bspline.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/scan_distortion/white_sample_noise.hpp"

namespace driftscan {
namespace {

// The normal equations of the fit are symmetric and banded: a sample touches
// four consecutive coefficients, a second difference three. Half-bandwidth 3.
constexpr std::size_t kBand = 4;

// Cholesky factorisation and solve of a symmetric positive definite band
// matrix stored as a[i][k] = A(i, i + k), k < kBand; in place (a becomes L
// with L(i + k, i) = a[i][k]). Returns false when a pivot is not positive.
bool band_cholesky(std::vector<std::array<double, kBand>>& a) {
  const std::size_t n = a.size();
  for (std::size_t j = 0; j < n; ++j) {
    // L(j, j)
    double d = a[j][0];
    for (std::size_t k = 1; k < kBand && k <= j; ++k) d -= a[j - k][k] * a[j - k][k];
    if (!(d > 0.0)) return false;
    const double ljj = std::sqrt(d);
    a[j][0] = ljj;
    // L(j + m, j) for m = 1..3
    for (std::size_t m = 1; m < kBand && j + m < n; ++m) {
      double s = a[j][m];
      // sum over columns c < j shared by rows j and j + m: L(j, c) L(j + m, c)
      for (std::size_t k = 1; k + m < kBand && k <= j; ++k) s -= a[j - k][k] * a[j - k][k + m];
      a[j][m] = s / ljj;
    }
  }
  return true;
}

// The band of Z = M^-1 from M's factor l (band_cholesky), by Takahashi's
// recursion: Z = L^-T L^-1, so for j >= i,
// Z(i, j) = [i == j] / L(i, i)^2 - sum_{k > i} L(k, i) Z(k, j) / L(i, i).
std::vector<std::array<double, kBand>> band_of_inverse(const std::vector<std::array<double, kBand>>& l) {
  const std::size_t n = l.size();
  std::vector<std::array<double, kBand>> z(n, std::array<double, kBand>{});
  auto z_at = [&z](std::size_t r, std::size_t c) {  // Z(r, c), |r - c| < kBand
    const std::size_t lo = std::min(r, c);
    return z[lo][std::min<std::size_t>(r + c - 2 * lo, kBand - 1)];
  };
  for (std::size_t i = n; i-- > 0;) {
    const double lii = l[i][0];
    for (std::size_t off = kBand - 1; off >= 1; --off) {
      if (i + off >= n) continue;
      double s = 0.0;
      for (std::size_t k = 1; k < kBand && i + k < n; ++k) s += l[i][k] * z_at(i + k, i + off);
      z[i][off] = -s / lii;
    }
    double s = 0.0;
    for (std::size_t k = 1; k < kBand && i + k < n; ++k) s += l[i][k] * z[i][k];
    z[i][0] = 1.0 / (lii * lii) - s / lii;
  }
  return z;
}

void band_solve(const std::vector<std::array<double, kBand>>& l, std::vector<double>& b) {
  const std::size_t n = l.size();
  for (std::size_t i = 0; i < n; ++i) {  // L z = b
    double s = b[i];
    for (std::size_t k = 1; k < kBand && k <= i; ++k) s -= l[i - k][k] * b[i - k];
    b[i] = s / l[i][0];
  }
  for (std::size_t i = n; i-- > 0;) {  // L^T c = z
    double s = b[i];
    for (std::size_t k = 1; k < kBand && i + k < n; ++k) s -= l[i][k] * b[i + k];
    b[i] = s / l[i][0];
  }
}

}  // namespace

double choose_knot_spacing(double frame_time, double samples_per_frame) {
  const double per_frame = std::clamp(samples_per_frame / 2.0, 1.0, 32.0);
  return frame_time / per_frame;
}

DriftPath DriftPath::fit(std::vector<DriftSample> samples, double t_begin, double t_end,
                         const DriftPathSettings& settings) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw bad_input("drift path: " + what);
  };
  require(std::isfinite(t_begin) && std::isfinite(t_end) && t_end > t_begin,
          "the time interval [" + message_number(t_begin) + ", " + message_number(t_end) + "] is empty");
  require(std::isfinite(settings.knot_spacing) && settings.knot_spacing > 0.0,
          "knot spacing must be > 0 (got " + message_number(settings.knot_spacing) + ")");
  require(std::isfinite(settings.smoothing) && settings.smoothing > 0.0,
          "smoothing must be > 0 (got " + message_number(settings.smoothing) + ")");
  const double span = t_end - t_begin;
  require(span / settings.knot_spacing <= 1e7, "knot spacing " + message_number(settings.knot_spacing) +
                                                   " s is too fine for " + message_number(span) + " s of scan");

  // Keep the samples that count, in one canonical order: the sums below are
  // then the same floating-point sums whatever order the caller used.
  samples.erase(std::remove_if(samples.begin(), samples.end(),
                               [&](const DriftSample& s) {
                                 return !(s.weight > 0.0) || !std::isfinite(s.weight) || !std::isfinite(s.t) ||
                                        !std::isfinite(s.dx) || !std::isfinite(s.dy) || s.t < t_begin || s.t > t_end;
                               }),
                samples.end());
  std::sort(samples.begin(), samples.end(), [](const DriftSample& a, const DriftSample& b) {
    return std::tie(a.t, a.dx, a.dy, a.weight) < std::tie(b.t, b.dx, b.dy, b.weight);
  });
  const bool two_times =
      !samples.empty() && samples.back().t - samples.front().t > 1e-12 * std::max(1.0, std::fabs(span));
  require(two_times, "needs weighted drift samples at two or more distinct times (got " +
                         std::to_string(samples.size()) + " usable sample" + (samples.size() == 1 ? "" : "s") + ")");

  DriftPath path;
  path.t_begin_ = t_begin;
  path.t_end_ = t_end;
  path.segments_ = static_cast<std::size_t>(std::max(1.0, std::ceil(span / settings.knot_spacing - 1e-9)));
  path.h_ = span / static_cast<double>(path.segments_);
  const std::size_t n = path.segments_ + 3;

  std::vector<std::array<double, kBand>> a(n, std::array<double, kBand>{});
  std::vector<double> bx(n, 0.0), by(n, 0.0);
  double total_weight = 0.0;
  for (const DriftSample& s : samples) {
    std::size_t seg;
    double u, w[4];
    path.locate(s.t, seg, u);
    bspline_weights(u, w);
    for (std::size_t i = 0; i < 4; ++i) {
      for (std::size_t j = i; j < 4; ++j) a[seg + i][j - i] += s.weight * w[i] * w[j];
      bx[seg + i] += s.weight * w[i] * s.dx;
      by[seg + i] += s.weight * w[i] * s.dy;
    }
    total_weight += s.weight;
  }
  const double v[3] = {1.0, -2.0, 1.0};
  auto solve_axis = [&](std::vector<std::array<double, kBand>> m, double smoothing, std::vector<double>& b) {
    const double lambda = smoothing * total_weight / static_cast<double>(n);
    for (std::size_t j = 0; j + 2 < n; ++j)
      for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t k = i; k < 3; ++k) m[j + i][k - i] += lambda * v[i] * v[k];
    require(band_cholesky(m), "the fit is singular (knot spacing " + message_number(path.h_) + " s, smoothing " +
                                  message_number(smoothing) + ")");
    band_solve(m, b);
  };
  solve_axis(a, settings.smoothing, bx);
  solve_axis(std::move(a), settings.smoothing_y > 0.0 ? settings.smoothing_y : settings.smoothing, by);
  path.cx_ = std::move(bx);
  path.cy_ = std::move(by);
  return path;
}

DriftPathSettings cross_validated_smoothing(const std::vector<DriftSample>& samples, double t_begin, double t_end,
                                            double knot_spacing, const std::vector<double>& candidates) {
  if (candidates.empty()) throw bad_input("drift path: no smoothing to choose from");
  std::vector<DriftSample> sorted;
  for (const DriftSample& s : samples)
    if (s.weight > 0.0 && std::isfinite(s.weight) && std::isfinite(s.t) && std::isfinite(s.dx) && std::isfinite(s.dy) &&
        s.t >= t_begin && s.t <= t_end)
      sorted.push_back(s);
  std::sort(sorted.begin(), sorted.end(), [](const DriftSample& a, const DriftSample& b) {
    return std::tie(a.t, a.dx, a.dy, a.weight) < std::tie(b.t, b.dx, b.dy, b.weight);
  });
  DriftPathSettings best;
  best.knot_spacing = knot_spacing;
  best.smoothing = candidates.front();
  if (sorted.size() < 8) return best;  // too few to leave half out: the first candidate, for both axes
  double best_x = std::numeric_limits<double>::infinity(), best_y = best_x;
  for (double smoothing : candidates) {
    DriftPathSettings ps;
    ps.knot_spacing = knot_spacing;
    ps.smoothing = smoothing;
    double ex = 0.0, ey = 0.0;
    try {
      for (std::size_t fold = 0; fold < 2; ++fold) {
        std::vector<DriftSample> kept = sorted;
        for (std::size_t i = fold; i < kept.size(); i += 2) kept[i].weight = 0.0;
        const DriftPath path = DriftPath::fit(std::move(kept), t_begin, t_end, ps);
        for (std::size_t i = fold; i < sorted.size(); i += 2) {
          const Point p = path.at(sorted[i].t);
          ex += sorted[i].weight * (p.x - sorted[i].dx) * (p.x - sorted[i].dx);
          ey += sorted[i].weight * (p.y - sorted[i].dy) * (p.y - sorted[i].dy);
        }
      }
    } catch (const Error&) {
      continue;  // half the samples cannot carry this candidate (e.g. one distinct time): not a choice
    }
    if (ex < best_x) best_x = ex, best.smoothing = smoothing;
    if (ey < best_y) best_y = ey, best.smoothing_y = smoothing;
  }
  return best;
}

DriftPath DriftPath::shifted(Point offset) const {
  DriftPath p = *this;
  if (p.cx_.empty()) {  // the zero path: one constant segment
    p.t_begin_ = 0.0, p.t_end_ = 1.0, p.h_ = 1.0, p.segments_ = 1;
    p.cx_.assign(4, 0.0), p.cy_.assign(4, 0.0);
  }
  for (double& c : p.cx_) c += offset.x;
  for (double& c : p.cy_) c += offset.y;
  return p;
}

DriftPath DriftPath::scaled(Point factor) const {
  DriftPath p = *this;
  for (double& c : p.cx_) c *= factor.x;
  for (double& c : p.cy_) c *= factor.y;
  return p;
}

void DriftPath::locate(double t, std::size_t& segment, double& u) const {
  const double x = (t - t_begin_) / h_;
  const double s = std::clamp(std::floor(x), 0.0, static_cast<double>(segments_ - 1));
  segment = static_cast<std::size_t>(s);
  u = x - s;  // in [0, 1]; exactly 1 at t_end
}

Point DriftPath::evaluate(std::size_t segment, double u) const {
  double w[4];
  bspline_weights(u, w);
  Point p;
  for (std::size_t i = 0; i < 4; ++i) {
    p.x += w[i] * cx_[segment + i];
    p.y += w[i] * cy_[segment + i];
  }
  return p;
}

Point DriftPath::derivative(std::size_t segment, double u) const {
  double w[4];
  bspline_weight_derivatives(u, w);
  Point p;
  for (std::size_t i = 0; i < 4; ++i) {
    p.x += w[i] * cx_[segment + i] / h_;
    p.y += w[i] * cy_[segment + i] / h_;
  }
  return p;
}

Point DriftPath::at(double t) const {
  if (cx_.empty()) return {};
  const double edge = std::clamp(t, t_begin_, t_end_);
  std::size_t seg;
  double u;
  locate(edge, seg, u);
  Point p = evaluate(seg, u);
  if (edge != t) {  // straight continuation beyond the fitted interval
    Point v = derivative(seg, u);
    p.x += v.x * (t - edge);
    p.y += v.y * (t - edge);
  }
  return p;
}

Point DriftPath::velocity(double t) const {
  if (cx_.empty()) return {};
  std::size_t seg;
  double u;
  locate(std::clamp(t, t_begin_, t_end_), seg, u);
  return derivative(seg, u);
}

}  // namespace driftscan

namespace driftscan {

namespace {

// A sample's residual variance that is drift no band resolves (at the mean
// weight): with residuals r = white noise (omega / w, its fitted share
// taken out by the residual degrees of freedom) + unresolved drift u,
// sum w r^2 = omega (n - edf) + u sum w, s2 = sum w r^2 / (n - edf).
double unresolved_drift_variance(double s2, double omega, double residual_dof, double total_weight) {
  return std::max(0.0, s2 - omega) * std::max(residual_dof, 0.0) / std::max(total_weight, 1e-300);
}

// The part of a line's drift inside its band that no band sample shows: a
// random walk of beta per band spacing (white_sample_noise's lag fit), seen
// about its band's mean, has mean square beta / 6 over the band's lines.
// One scan direction only, and the smaller of the two axes' for both: along
// the fast axis the lag fit reads the lines' jitter correlated from band to
// band as walk too (each axis's own beta / 6 put the one-direction cases of
// bench_scan_distortion at z-RMS 0.77-0.83, seed 11), and in several
// directions the path sigma already holds it (s11's pass: those cases fell
// to 0.75-0.78 with it).
double within_band_walk(const std::vector<DriftSample>& samples, int axis) {
  return white_sample_noise(samples, axis).walk / 6.0;
}

// The samples' white variance along a unit direction, per sample at their
// mean 1 / weight (omega mean(1 / w)); down to 4 triples a lag (two frames
// of 8 bands, no fly-back between them).
double white_per_sample(const std::vector<DriftSample>& samples, Point along) {
  const double omega = white_sample_noise(
                           samples, [along](const DriftSample&) { return along; }, 4)
                           .scale;
  double inv = 0.0, n = 0.0;
  for (const DriftSample& s : samples)
    if (s.weight > 0.0 && std::isfinite(s.weight)) inv += 1.0 / s.weight, n += 1.0;
  return n > 0.0 ? omega * inv / n : 0.0;
}

// Two frames in one direction, each the other's template: the samples
// hold only what differs between the frames, the path keeps what they
// share, and no residual shows that. Measured on bench_scan_distortion's
// 2-frame one-direction pair (seeds 2-8, 11): the path's error along the
// fast axis ~0.1 px at every seed, the same bowl in both frames (seed 11:
// +0.17 .. -0.15 px), against an unresolved-drift sd of 0.04-0.07 px read
// from 16 residuals; path z-RMS x 1.736, y 1.294 over the seeds. Two parts:
// - the unresolved drift, one figure for both axes, the larger of the two:
//   a drift's walk is the same along both, and 16 residuals an axis read it
//   poorly (seed 5: y 0.033 px against x 0.066, its y z 2.36);
// - along the fast axis, the lines' jitter and noise common to the two
//   frames, at the samples' white part along it (white_per_sample). A
//   quarter or half of it (the jitter's common half alone) left x at z-RMS
//   1.39 / 1.28 over the seeds; the common part also holds the walk's bend
//   shared by both frames, which two frames' lag fit does not read.
void two_frames_unseen(double& nugget_x, double& nugget_y, const std::vector<DriftSample>& samples, Point fast) {
  nugget_x = nugget_y = std::max(nugget_x, nugget_y);
  const double common = white_per_sample(samples, fast);
  nugget_x += fast.x * fast.x * common;
  nugget_y += fast.y * fast.y * common;
}

// The samples' white scale (omega of white_sample_noise) along x and y.
// Without fast_axis: estimated along x and y. With it: along each sample's
// frame's fast and slow axes, each sample's share turned into x and y
// (f_x^2 omega_fast + f_y^2 omega_slow along x), averaged over the samples
// the fit uses: frames in several directions carry their jitter along
// different specimen axes, and pooling along x and y read half of it as drift.
// `fast_and_slow`, when given and fast_axis is: the two omegas themselves.
std::array<double, 2> white_variance_along_axes(const std::vector<DriftSample>& samples, double t_begin, double t_end,
                                                const std::function<Point(double)>& fast_axis,
                                                std::array<double, 2>* fast_and_slow = nullptr) {
  if (!fast_axis) return {white_sample_noise(samples, 0).scale, white_sample_noise(samples, 1).scale};
  // Down to 4 triples a lag (two frames of 8 bands): with none, the whole
  // residual was taken for unresolved drift, and one orthogonal pair's path
  // sigma came out too large (bench_scan_distortion, seeds 11, 5, 3: z-RMS
  // x 0.88 0.86 0.72, y 0.72 0.70 0.97 -> x 0.98 1.21 0.78, y 0.82 0.92
  // 1.11). A single direction keeps 8: there a few
  // frames' residual also stands in for the pattern common to every frame,
  // which no residual shows (its 2-frame twin: z-RMS 1.6-2.5, 5.8 at 4).
  const std::size_t min_per_lag = 4;
  const double fast = white_sample_noise(
                          samples, [&](const DriftSample& d) { return fast_axis(d.t); }, min_per_lag)
                          .scale;
  const double slow = white_sample_noise(
                          samples,
                          [&](const DriftSample& d) {
                            const Point f = fast_axis(d.t);
                            return Point{-f.y, f.x};
                          },
                          min_per_lag)
                          .scale;
  if (fast_and_slow) *fast_and_slow = {fast, slow};
  std::array<double, 2> sum{0.0, 0.0};
  double used = 0.0;
  for (const DriftSample& s : samples) {
    if (!(s.weight > 0.0) || !std::isfinite(s.weight) || !std::isfinite(s.t) || s.t < t_begin || s.t > t_end) continue;
    const Point f = fast_axis(s.t);
    sum[0] += f.x * f.x * fast + f.y * f.y * slow;
    sum[1] += f.y * f.y * fast + f.x * f.x * slow;
    used += 1.0;
  }
  if (!(used > 0.0)) return {0.0, 0.0};
  return {sum[0] / used, sum[1] / used};
}

// How far, in coefficients, a sample's pull on the path is followed when
// the samples' variance differs by scan direction (the sandwich below):
// M^-1's rows decay geometrically, about e^-1 every (lambda / data)^(1/4)
// x 1.4 coefficients, under 4 at the stiffest smoothing candidate. Measured
// against 32: every sigma the same on a revolving scan of 16 frames, within
// 2e-4 (relative) on 12 frames in orthogonal pairs; at half the cost.
constexpr std::size_t kKernelReach = 16;

// A band sample the fit used, for the sandwich: its basis weights, its
// weight, its residuals and its frame's fast axis.
struct UsedSample {
  std::size_t seg = 0;
  double basis[4] = {};
  double weight = 0.0;
  Point residual, fast;
};

// Frames in several directions: the unresolved drift, one figure for x and
// y, from the residuals along each sample's slow axis and, at a quarter of
// the weight (kFastAxisShare), along its fast axis. Along the fast axis the
// residual is mostly the lines' jitter, with noise correlated from band to
// band that white_sample_noise's lag fit reads as a random walk (seed 11's
// jitter-0.5 series: 0.05-0.06 along the fast axes against 0.001-0.01 along
// the slow ones, though a drift's walk is the same along both): taken as
// drift at full weight, it made the path sigma of bench_scan_distortion's
// jitter-0.5 series in several directions too large (z-RMS 0.87-0.92 over
// seeds 2-8 and 11; 0.92-0.96 now). The slow axes alone read too little
// (about 1.13); a third instead of a half, the same count in range. Since
// the path has two knots a band in several directions (ScanDistortionSteps'
// path_knot_spacing), it leaves less drift unresolved: at a half the
// jitter-0.5 series' path sigma came out too large again (z-RMS 0.77-0.79,
// seeds 2 and 3), 114 of 128 axes in range over seeds 2-8 and 11 of the
// several-direction cases against 120 with the coarser knots; a third 118, a
// quarter 120 (jitter sigma 61 of 64 cases in range at each). One
// figure for both axes: the path error left unresolved there is nearly
// isotropic (0.05-0.07 px along the fast and the slow axes alike).
// `white`: omega (fast, slow); `dof_share`: the residual degrees of freedom
// per sample.
constexpr double kFastAxisShare = 0.25;

double several_direction_unresolved_drift(const std::vector<UsedSample>& used, const std::array<double, 2>& white,
                                          double dof_share) {
  double r2 = 0.0, expected = 0.0, weight = 0.0;
  for (const UsedSample& u : used)
    for (int axis = 0; axis < 2; ++axis) {
      const double f = axis == 0 ? u.fast.x : u.fast.y, fast = f * f, slow = 1.0 - fast;
      const double share = slow + kFastAxisShare * fast, r = axis == 0 ? u.residual.x : u.residual.y;
      r2 += share * u.weight * r * r;
      expected += share * (fast * white[0] + slow * white[1]) * dof_share;
      weight += share * u.weight;
    }
  if (!(weight > 0.0)) return 0.0;
  return std::max(0.0, r2 - expected) / weight;
}

// One scan direction: an axis whose residual reads no unresolved drift at
// all (all of it white part: the estimate clamps at 0) takes the other
// axis's. A clamped estimate is censored, not a measured 0: a drifting walk
// leaves some drift between the knots along both axes, and at low dose the
// white part of the axis that carries the lines' jitter (several times the
// other's) swallows it in the lag fit's noise. bench_scan_distortion's real
// ABF dose-4 series in one direction read 0 along x at 3 of 8 seeds (path
// z-RMS x 1.55-1.85 there) while y read 0.03-0.05 px.
void unclamp_unresolved_drift(double& x, double& y) {
  if (!(x > 0.0)) x = y;
  else if (!(y > 0.0)) y = x;
}

// The samples' variance along one axis (x: 0, y: 1) as v_i / w_i with
// v_i = along_fast f_i^2 + along_slow (1 - f_i^2), f_i the component of
// sample i's fast axis along this axis. Along x of a 0-degree frame the
// lines' jitter is in the sample, along y it is not; one scale s2 for both
// read the slow axis's path as noisier than it is (bench_scan_distortion's
// revolving scan: 0-degree frames' y z-RMS 0.71). By moments: E[w_i r_i^2]
// = v_i (1 - 2 H_ii) + w_i sum_j w_j v_j (a_i^T M^-1 a_j)^2 (H the fit's hat
// matrix: a slow sample's residual also holds the fit's error, which its
// fast neighbours make), least squares in (along_fast, along_slow) over the
// samples. {s2, s2} when the directions cannot tell the two apart or one
// comes out negative. `used` sorted by seg; `wide` M^-1's band to `reach`.
std::array<double, 2> variance_along_fast_and_slow(const std::vector<UsedSample>& used, int axis, double s2,
                                                   const std::vector<double>& wide, std::size_t reach) {
  const std::size_t stride = reach + 1;
  auto fast_share = [axis](const UsedSample& u) { return axis == 0 ? u.fast.x * u.fast.x : u.fast.y * u.fast.y; };
  auto between = [&](const UsedSample& a, const UsedSample& b) {  // a^T M^-1 b
    double h = 0.0;
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t j = 0; j < 4; ++j) {
        const std::size_t r = std::min(a.seg + i, b.seg + j), d = std::max(a.seg + i, b.seg + j) - r;
        h += a.basis[i] * b.basis[j] * wide[r * stride + d];
      }
    return h;
  };
  double aa = 0, ab = 0, bb = 0, ay = 0, by = 0;
  for (std::size_t i = 0; i < used.size(); ++i) {
    const UsedSample& u = used[i];
    const double f = fast_share(u), hii = u.weight * between(u, u);
    double cf = (1.0 - 2.0 * hii) * f, cs = (1.0 - 2.0 * hii) * (1.0 - f);
    auto add = [&](const UsedSample& o) {
      const double h = between(u, o), t = u.weight * o.weight * h * h, fo = fast_share(o);
      cf += t * fo, cs += t * (1.0 - fo);
    };
    add(u);
    for (std::size_t j = i; j-- > 0 && used[j].seg + reach >= u.seg + 3;) add(used[j]);
    for (std::size_t j = i + 1; j < used.size() && u.seg + reach >= used[j].seg + 3; ++j) add(used[j]);
    const double r = axis == 0 ? u.residual.x : u.residual.y, y = u.weight * r * r;
    aa += cf * cf, ab += cf * cs, bb += cs * cs, ay += cf * y, by += cs * y;
  }
  const double det = aa * bb - ab * ab;
  if (!(det > 1e-6 * (aa * bb))) return {s2, s2};
  const double fast = (bb * ay - ab * by) / det, slow = (aa * by - ab * ay) / det;
  if (!(fast >= 0.0) || !(slow >= 0.0)) return {s2, s2};
  return {fast, slow};
}

// The band of M^-1 to kKernelReach off the diagonal from M's band Cholesky
// factor l (Takahashi, as in of()): wide[i * (reach + 1) + k] = M^-1(i, i + k).
std::vector<double> wide_inverse_band(const std::vector<std::array<double, kBand>>& l, std::size_t reach) {
  const std::size_t n = l.size(), stride = reach + 1;
  std::vector<double> wide(n * stride, 0.0);
  auto at = [&](std::size_t r, std::size_t c) {
    const std::size_t lo = std::min(r, c);
    return wide[lo * stride + (r + c - 2 * lo)];
  };
  for (std::size_t i = n; i-- > 0;) {
    const double lii = l[i][0];
    for (std::size_t off = std::min(reach, n - 1 - i); off >= 1; --off) {
      double s = 0.0;
      for (std::size_t k = 1; k < kBand && i + k < n; ++k) s += l[i][k] * at(i + k, i + off);
      wide[i * stride + off] = -s / lii;
    }
    double s = 0.0;
    for (std::size_t k = 1; k < kBand && i + k < n; ++k) s += l[i][k] * wide[i * stride + k];
    wide[i * stride] = 1.0 / (lii * lii) - s / lii;
  }
  return wide;
}

// What frames in several directions add to one axis's covariance: the
// sandwich M^-1 (A^T W V A + s2 lambda P) M^-1 with sample i's variance
// v_i / w_i along this axis (its frame's fast or slow axis) is s2 M^-1 +
// sum_i w_i (v_i - s2) (M^-1 a_i)(M^-1 a_i)^T; z (band rows), q (times the
// gauge b: `gauge_q` = M^-1 b) and c0 of that sum, unscaled; empty when every
// v_i is s2. The smoothing's bias keeps s2's share. `l`: M's band Cholesky factor.
struct SandwichExtra {
  std::vector<std::array<double, 4>> z;
  std::vector<double> q;
  double c0 = 0.0;
};

SandwichExtra direction_sandwich(const std::vector<UsedSample>& kept, int axis, double s2,
                                 const std::vector<std::array<double, kBand>>& l, const std::vector<double>& gauge_q) {
  SandwichExtra extra;
  const std::size_t n = l.size(), reach = std::min(kKernelReach, n - 1), stride = reach + 1;
  const std::vector<double> wide = wide_inverse_band(l, reach);
  const std::array<double, 2> v = variance_along_fast_and_slow(kept, axis, s2, wide, reach);
  if (v[0] == s2 && v[1] == s2) return extra;
  extra.z.assign(n, std::array<double, 4>{});
  extra.q.assign(n, 0.0);
  std::vector<double> col(2 * reach + 4);
  for (const UsedSample& k : kept) {
    const double f = axis == 0 ? k.fast.x : k.fast.y;
    const double coef = k.weight * (v[0] * f * f + v[1] * (1.0 - f * f) - s2);
    // (M^-1 a_i)(p) for p within reach of the sample's four coefficients.
    const std::size_t lo = k.seg + 3 > reach ? k.seg + 3 - reach : 0, hi = std::min(n - 1, k.seg + reach);
    for (std::size_t p = lo; p <= hi; ++p) {
      double c = 0.0;
      for (std::size_t j = 0; j < 4; ++j) {
        const std::size_t r = std::min(p, k.seg + j), d = std::max(p, k.seg + j) - r;
        c += k.basis[j] * wide[r * stride + d];
      }
      col[p - lo] = c;
    }
    double along_gauge = 0.0;  // a_i^T M^-1 b
    for (std::size_t j = 0; j < 4; ++j) along_gauge += k.basis[j] * gauge_q[k.seg + j];
    for (std::size_t p = lo; p <= hi; ++p) {
      const double cp = coef * col[p - lo];
      for (std::size_t d = 0; d < 4 && p + d <= hi; ++d) extra.z[p][d] += cp * col[p + d - lo];
      extra.q[p] += cp * along_gauge;
    }
    extra.c0 += coef * along_gauge * along_gauge;
  }
  return extra;
}

}  // namespace

DriftPathUncertainty DriftPathUncertainty::of(const std::vector<DriftSample>& samples, double t_begin, double t_end,
                                              const DriftPathSettings& settings, std::size_t gauge_count,
                                              const std::function<double(std::size_t)>& gauge_time,
                                              const std::function<Point(double)>& fast_axis, Point two_frames_fast) {
  const DriftPath path = DriftPath::fit(samples, t_begin, t_end, settings);  // validates; the residuals' path
  DriftPathUncertainty u;
  const std::size_t n = path.coefficient_count();
  u.t_begin_ = t_begin, u.h_ = path.knot_spacing(), u.segments_ = n - 3;
  auto weights_at = [&u](double t, std::size_t& seg, double w[4]) {
    const double x = (t - u.t_begin_) / u.h_;
    const double s = std::clamp(std::floor(x), 0.0, static_cast<double>(u.segments_ - 1));
    seg = static_cast<std::size_t>(s);
    bspline_weights(std::clamp(x - s, 0.0, 1.0), w);
  };
  // A^T W A and the weighted residuals, over the samples the fit used.
  std::vector<std::array<double, kBand>> g(n, std::array<double, kBand>{});
  double total_weight = 0.0, used = 0.0, r2[2] = {0.0, 0.0};
  std::vector<UsedSample> kept;  // several scan directions only
  for (const DriftSample& s : samples) {
    if (!(s.weight > 0.0) || !std::isfinite(s.weight) || !std::isfinite(s.t) || !std::isfinite(s.dx) ||
        !std::isfinite(s.dy) || s.t < t_begin || s.t > t_end)
      continue;
    std::size_t seg;
    double w[4];
    weights_at(s.t, seg, w);
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t j = i; j < 4; ++j) g[seg + i][j - i] += s.weight * w[i] * w[j];
    const Point p = path.at(s.t);
    r2[0] += s.weight * (p.x - s.dx) * (p.x - s.dx), r2[1] += s.weight * (p.y - s.dy) * (p.y - s.dy);
    total_weight += s.weight, used += 1.0;
    if (fast_axis) {
      UsedSample k;
      k.seg = seg, k.weight = s.weight, k.residual = {s.dx - p.x, s.dy - p.y}, k.fast = fast_axis(s.t);
      std::copy(w, w + 4, k.basis);
      kept.push_back(k);
    }
  }
  std::stable_sort(kept.begin(), kept.end(), [](const UsedSample& a, const UsedSample& b) { return a.seg < b.seg; });
  // The gauge: the mean basis vector over the gauge times.
  std::vector<double> b(n, 0.0);
  for (std::size_t g_i = 0; g_i < gauge_count; ++g_i) {
    std::size_t seg;
    double w[4];
    weights_at(std::clamp(gauge_time(g_i), t_begin, t_end), seg, w);
    for (std::size_t i = 0; i < 4; ++i) b[seg + i] += w[i] / static_cast<double>(gauge_count);
  }
  std::array<double, 2> white_fs{0.0, 0.0};
  const std::array<double, 2> white = white_variance_along_axes(samples, t_begin, t_end, fast_axis, &white_fs);
  double dof_share = 0.0;  // the residual degrees of freedom per sample, mean over the axes
  const double v[3] = {1.0, -2.0, 1.0};
  for (int axis = 0; axis < 2; ++axis) {
    const double smoothing = axis == 1 && settings.smoothing_y > 0.0 ? settings.smoothing_y : settings.smoothing;
    std::vector<std::array<double, kBand>> m = g;
    const double lambda = smoothing * total_weight / static_cast<double>(n);
    for (std::size_t j = 0; j + 2 < n; ++j)
      for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t k = i; k < 3; ++k) m[j + i][k - i] += lambda * v[i] * v[k];
    if (!band_cholesky(m)) throw bad_input("drift path: the fit is singular");
    Axis& a = u.axis_[axis];
    a.z = band_of_inverse(m);
    double edf = 0.0;  // trace(M^-1 A^T W A)
    for (std::size_t i = 0; i < n; ++i) {
      edf += g[i][0] * a.z[i][0];
      for (std::size_t k = 1; k < kBand && i + k < n; ++k) edf += 2.0 * g[i][k] * a.z[i][k];
    }
    const double s2 = r2[axis] / std::max(1.0, used - edf);
    a.q = b;
    band_solve(m, a.q);
    a.c0 = 0.0;
    for (std::size_t i = 0; i < n; ++i) a.c0 += b[i] * a.q[i];
    // Frames in several directions: the sandwich (direction_sandwich).
    const SandwichExtra extra = kept.empty() ? SandwichExtra{} : direction_sandwich(kept, axis, s2, m, a.q);
    for (auto& row : a.z)
      for (double& z : row) z *= s2;
    for (double& q : a.q) q *= s2;
    a.c0 *= s2;
    if (!extra.z.empty()) {
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t d = 0; d < 4; ++d) a.z[i][d] += extra.z[i][d];
        a.q[i] += extra.q[i];
      }
      a.c0 += extra.c0;
    }
    (axis == 0 ? u.offset_.x : u.offset_.y) = std::sqrt(std::max(0.0, a.c0));
    (axis == 0 ? u.scale_.x : u.scale_.y) = s2;
    a.nugget = unresolved_drift_variance(s2, white[static_cast<std::size_t>(axis)], used - edf, total_weight);
    dof_share += 0.5 * (used - edf) / std::max(used, 1.0);
  }
  // Several directions: one unresolved drift for both axes, mostly from the
  // slow axes (several_direction_unresolved_drift). One direction (also
  // given as fast_axis) keeps the estimate along x and y, an axis clamped at
  // 0 taking the other's (unclamp_unresolved_drift).
  const bool turned = std::any_of(kept.begin(), kept.end(), [&](const UsedSample& k) {
    return std::fabs(k.fast.x - kept.front().fast.x) + std::fabs(k.fast.y - kept.front().fast.y) > 1e-9;
  });
  if (fast_axis && turned)
    u.axis_[0].nugget = u.axis_[1].nugget = several_direction_unresolved_drift(kept, white_fs, dof_share);
  else {
    unclamp_unresolved_drift(u.axis_[0].nugget, u.axis_[1].nugget);
    const double walk = std::min(within_band_walk(samples, 0), within_band_walk(samples, 1));
    u.axis_[0].nugget += walk;
    u.axis_[1].nugget += walk;
    if (two_frames_fast.x != 0.0 || two_frames_fast.y != 0.0)
      two_frames_unseen(u.axis_[0].nugget, u.axis_[1].nugget, samples, two_frames_fast);
  }
  return u;
}

Point DriftPathUncertainty::sigma(double t) const {
  if (empty()) return {};
  const double x = (t - t_begin_) / h_;
  const double s = std::clamp(std::floor(x), 0.0, static_cast<double>(segments_ - 1));
  const auto seg = static_cast<std::size_t>(s);
  double w[4];
  bspline_weights(std::clamp(x - s, 0.0, 1.0), w);
  double var[2];
  for (int axis = 0; axis < 2; ++axis) {
    const Axis& a = axis_[axis];
    double v = a.c0 + a.nugget;
    for (std::size_t i = 0; i < 4; ++i) {
      v -= 2.0 * w[i] * a.q[seg + i];
      for (std::size_t j = 0; j < 4; ++j) {
        const std::size_t p = seg + std::min(i, j), q = seg + std::max(i, j);
        v += w[i] * w[j] * a.z[p][std::min<std::size_t>(q - p, 3)];
      }
    }
    var[axis] = std::max(0.0, v);
  }
  return {std::sqrt(var[0]), std::sqrt(var[1])};
}

}  // namespace driftscan
