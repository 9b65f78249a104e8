// Scan-distortion correction against the synthetic generator's per-line
// truth, and against rigid registration, on raster-scanned series.
//
// For each case a scanned series is synthesised (drift during every frame,
// line jitter, Poisson noise), then:
//   rigid     — DriftScan's rigid register run (pairs, scan with refinement),
//               its one shift per frame averaged like the others;
//   corrected — the scan-distortion estimate started from the rigid drift,
//               averaged in specimen coordinates;
//   oracle    — the same frames averaged in specimen coordinates with the
//               true per-line drift and jitter (and fly-back hysteresis).
// The hysteresis case runs twice: without and with the line field (8 knots),
// and prints the fields' error against the truth.
// All three are averaged the same way (specimen coordinates, cubic
// B-splines), so interpolation smoothing favours none. Each average is scored by fitting it to the clean specimen with
// an affine map plus gain and offset (so the choice of reference frame costs nothing) and taking the residual RMS over
// the specimen region every frame covers (in counts). A shift of the whole model still moves every frame's samples
// against the specimen grid by the same fraction of a pixel, and on smooth content the resampling's smoothing of the
// noise depends on it (orthogonal pairs on real ABF content: the oracle shifted by 0.25-0.7 px scores 27% lower to 16%
// higher, seeds 11 and 5); so the oracle is also scored in the estimate's gauge (shifted by the mean of the estimate's
// line position errors), which leaves the estimate's own, per-line errors (--error-diagnostic: which of them cost).
// Also printed: per-line drift and jitter error (and the line fits' own predicted precision, a floor for the jitter
// error; the jitter's Cramér–Rao floors: with the specimen and the drift known, with the average's row offsets, with
// the specimen learned, and with the drift learned — specimen known, the drift's random walk estimated from the same
// lines, the bound for this series' model), each line's fast-axis position error (path and jitter together: what the
// average sees, whichever of the two carries it) and its part common to the lines that show one specimen row (what the
// average keeps as a warp; independent errors average out), rounds, wall time and process CPU time (the honest figure
// on a shared machine with --threads 1) of the estimate against the rigid run.
//
//   bench_scan_distortion [--threads N] [--cases 1,2,..] [--frames N] [--size N] [--rounds N] [--band-lines N]
//                         [--smoothing S] [--no-jitter] [--no-template-filter]
//                         [--template-filter-noise-scale S] [--template-diagnostic]
//                         [--error-diagnostic] [--no-twins]
//                         [--line-field KNOTS] [--line-field-extent FRACTION] [--line-field-prior PX]
//                         [--binned-first-round SAMPLES] (ScanDistortionSettings::binned_first_round_from)
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/apodisation_window.hpp"
#include "driftscan/core/bspline_taps.hpp"
#include "driftscan/core/cubic_bspline.hpp"
#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/fftw_planner.hpp"
#include "driftscan/core/omp_threads.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

constexpr double kPi = 3.14159265358979323846;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Case {
  std::string name;
  SynthOptions synth;
  int line_field_knots = -1;  // -1: the command line's (--line-field)
};

// An average and where specimen point q falls in its pixels: pixel = q - origin.
struct PlacedAverage {
  Frame image;
  Point origin;
};

// The engine's gauge in the truth (scan_distortion.cpp's to_gauge): specimen
// coordinates are frame 0's pixels where frame 0 shows them on average, the
// mean over frame 0's lines of the position (path and jitter) 0. The
// generator's own origin is the drift at the series' start, d(0) = 0; every
// figure below that places the truth absolutely (the oracle, the rigid
// average, the line position errors) takes it off, so that a correct
// estimate lands on the oracle's grid to the sample.
Point truth_gauge(const SyntheticSeries& s) {
  const ScanTiming& t = s.scan_timing();
  const Point f = t.fast_axis(0);
  Point mean;
  for (int l = 0; l < t.lines(); ++l) {
    const Point d = s.drift_at(t.line_mid_time(0, l));
    const double j = s.line_jitter(0, l);
    mean.x += (d.x + j * f.x) / t.lines(), mean.y += (d.y + j * f.y) / t.lines();
  }
  return mean;
}

// The true drift at time u in the engine's gauge (`gauge`: truth_gauge(s)).
Point true_drift(const SyntheticSeries& s, double u, Point gauge) {
  const Point d = s.drift_at(u);
  return {d.x - gauge.x, d.y - gauge.y};
}

// Residual RMS of `avg` against the clean specimen over `points` (specimen
// coordinates) after the best fit avg(q) ~ g * S(A q + b) + c, by
// Gauss-Newton over (A, b, g, c) with S's gradient by central differences,
// from b the engine's gauge in the generator's coordinates (a fit started
// pixels off, as frame 0's mean drift puts it, need not find the minimum on
// the real content).
double residual_to_specimen(const SyntheticSeries& s, const PlacedAverage& avg, const std::vector<Point>& points) {
  Frame coeffs = avg.image;
  bspline_prefilter(coeffs);
  const std::size_t n = points.size();
  std::vector<double> a(n);
  for (std::size_t i = 0; i < n; ++i)
    a[i] = sample_bspline(coeffs, points[i].x - avg.origin.x, points[i].y - avg.origin.y);
  const Point gauge = truth_gauge(s);
  double A[4] = {1, 0, 0, 1}, b[2] = {gauge.x, gauge.y}, g = 1, c = 0;
  const int w = static_cast<int>(n), h = 1;
  auto render = [&](double ox, double oy) {
    std::vector<Point> q(n);
    for (std::size_t i = 0; i < n; ++i) {
      const Point p = points[i];
      q[i] = {A[0] * p.x + A[1] * p.y + b[0] + ox, A[2] * p.x + A[3] * p.y + b[1] + oy};
    }
    return s.specimen(q, w, h);
  };
  double rms = 0;
  for (int iteration = 0; iteration < 8; ++iteration) {
    const Frame f = render(0, 0), fx1 = render(0.25, 0), fx0 = render(-0.25, 0), fy1 = render(0, 0.25),
                fy0 = render(0, -0.25);
    // Unknowns: dA(4), db(2), dg, dc; r = a - g S - c.
    double M[8][8] = {}, v[8] = {}, rr = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double S = f.pixels[i], Sx = (fx1.pixels[i] - fx0.pixels[i]) * 2.0,
                   Sy = (fy1.pixels[i] - fy0.pixels[i]) * 2.0;
      const double r = a[i] - g * S - c;
      const Point p = points[i];
      const double J[8] = {g * Sx * p.x, g * Sx * p.y, g * Sy * p.x, g * Sy * p.y, g * Sx, g * Sy, S, 1.0};
      for (int m = 0; m < 8; ++m) {
        for (int l = 0; l < 8; ++l) M[m][l] += J[m] * J[l];
        v[m] += J[m] * r;
      }
      rr += r * r;
    }
    rms = std::sqrt(rr / static_cast<double>(n));
    // Solve M x = v (Gaussian elimination with partial pivoting; 8x8).
    for (int col = 0; col < 8; ++col) {
      int best = col;
      for (int r = col + 1; r < 8; ++r)
        if (std::fabs(M[r][col]) > std::fabs(M[best][col])) best = r;
      std::swap(M[col], M[best]);
      std::swap(v[col], v[best]);
      if (std::fabs(M[col][col]) < 1e-30) return rms;
      for (int r = col + 1; r < 8; ++r) {
        const double f2 = M[r][col] / M[col][col];
        for (int l = col; l < 8; ++l) M[r][l] -= f2 * M[col][l];
        v[r] -= f2 * v[col];
      }
    }
    double x[8];
    for (int i = 7; i >= 0; --i) {
      double sum = v[i];
      for (int l = i + 1; l < 8; ++l) sum -= M[i][l] * x[l];
      x[i] = sum / M[i][i];
    }
    for (int i = 0; i < 4; ++i) A[i] += x[i];
    b[0] += x[4], b[1] += x[5], g += x[6], c += x[7];
    if (std::fabs(x[4]) + std::fabs(x[5]) < 1e-5) break;
  }
  {  // the residual at the final parameters
    const Frame f = render(0, 0);
    double rr = 0;
    for (std::size_t i = 0; i < n; ++i) rr += std::pow(a[i] - g * f.pixels[i] - c, 2);
    rms = std::sqrt(rr / static_cast<double>(n));
  }
  return rms;
}

// The true per-line model of a scanned synthetic series: a path through the
// truth sampled at every line's start, middle and end (knots every half line
// time: the truth's random walk is piecewise linear per line time) and the
// true jitter.
ScanModel oracle_model(const SyntheticSeries& s) {
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  std::vector<DriftSample> samples;
  const double t_end = t.frame_start(n);
  const Point gauge = truth_gauge(s);
  for (double u = 0; u <= t_end; u += 0.25 * t.line_time()) {
    const Point d = true_drift(s, u, gauge);
    samples.push_back({u, d.x, d.y, 1});
  }
  DriftPathSettings ps;
  ps.knot_spacing = 0.5 * t.line_time();
  ps.smoothing = 1e-6;
  ScanModel m;
  m.path = DriftPath::fit(samples, 0.0, t_end, ps);
  m.jitter.assign(n, std::vector<double>(static_cast<std::size_t>(t.lines())));
  for (std::size_t k = 0; k < n; ++k)
    for (int l = 0; l < t.lines(); ++l) m.jitter[k][static_cast<std::size_t>(l)] = s.line_jitter(k, l);
  if (s.options().scan_hysteresis != 0.0) {
    // The true hysteresis on a fine basis over the whole line (a knot every
    // 2 samples; the coefficients are the truth at their centres: its
    // decay length is tens of samples, so the spline is within 0.1% of it).
    const int samples = t.samples_per_line();
    m.field_basis = LineFieldBasis(samples, samples / 2, samples);
    m.field.assign(n, std::vector<double>(static_cast<std::size_t>(m.field_basis.knots())));
    for (std::size_t k = 0; k < n; ++k)
      for (int c = 0; c < m.field_basis.knots(); ++c)
        m.field[k][static_cast<std::size_t>(c)] = s.line_field(k, std::max(0.0, m.field_basis.centre(c)));
  }
  return m;
}

// The floor of any jitter estimate from these frames: each line's
// Cramér–Rao bound for its fast-axis offset, given everything else (the
// clean specimen, the path). Fisher information I = sum over the line's
// pixels of (d mu / d j)^2 / var, mu the clean frame (the gradient along the
// fast axis from its cubic B-spline), var its Poisson and read noise; with
// the jitter's own spread sigma as the prior (Van Trees), no estimate's mean
// square error is below 1/(I + 1/sigma^2). RMS over all lines of all frames.
// The share of a line's Fisher information that survives when the specimen
// is not known but learned from the other n - 1 frames: an estimate that
// weights the template's gradient by the Wiener gain S / (S + N_t) (the
// Bayesian estimate of a specimen with power spectrum S under template
// noise N_t, white at 1/(n-1) of one frame's) keeps
//     sum k_f^2 S^2 / (S + N_t)  /  sum k_f^2 S
// of the information, k_f the frequency along the fast axis. S is the clean
// frame's windowed power spectrum, 3x3-smoothed; the noise its mean Poisson
// plus read variance. An approximation (stationary noise and specimen), for
// telling the cost of not knowing the specimen apart from the estimator's.
double learned_specimen_share(const Frame& clean, double noise_var, std::size_t frames, Point fast) {
  const int w = clean.width, h = clean.height;
  RealFft2d<double> fft(w, h);
  FftBuffer<double> in(fft.real_size());
  double mean = 0.0;
  for (const float v : clean.pixels) mean += v;
  mean /= static_cast<double>(clean.pixels.size());
  const std::vector<double> wx = tukey_window(static_cast<std::size_t>(w), 0.25);
  const std::vector<double> wy = tukey_window(static_cast<std::size_t>(h), 0.25);
  double square = 0.0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double a = wx[static_cast<std::size_t>(x)] * wy[static_cast<std::size_t>(y)];
      in[static_cast<std::size_t>(y) * w + x] = (clean.at(x, y) - mean) * a;
      square += a * a;
    }
  FftBuffer<std::complex<double>> out(fft.spectrum_size());
  fft.forward(in.data(), out.data());
  const int sw = fft.spectrum_width();
  const double scale = static_cast<double>(w) * h / square;  // unit mean-square window
  std::vector<double> p(out.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = std::norm(out[i]) * scale;
  const double template_noise =
      static_cast<double>(w) * h * noise_var / static_cast<double>(std::max<std::size_t>(1, frames - 1));
  double kept = 0.0, all = 0.0;
  for (int v = 0; v < h; ++v)
    for (int u = 0; u < sw; ++u) {
      double sum = 0.0;
      int count = 0;
      for (int dv = -1; dv <= 1; ++dv)
        for (int du = -1; du <= 1; ++du) {
          const int uu = u + du, vv = (v + dv + h) % h;
          if (uu < 0 || uu >= sw) continue;
          sum += p[static_cast<std::size_t>(vv) * sw + uu], ++count;
        }
      const double S = std::max(0.0, sum / count);
      const double ku = 2.0 * kPi * u / w, kv = 2.0 * kPi * (v <= h / 2 ? v : v - h) / h;
      const double kf = ku * fast.x + kv * fast.y;
      const double weight = (u == 0 || 2 * u == w ? 1.0 : 2.0) * kf * kf;  // r2c: the mirrored half counts too
      all += weight * S;
      if (S > 0) kept += weight * S * S / (S + template_noise);
    }
  return all > 0 ? kept / all : 1.0;
}

// Each line's Fisher information about a shift of it along the fast and the
// slow axis of the recorded frame `clean` (frame k of s, noise-free): sum of
// g^2 / var over its pixels, g the clean frame's cubic B-spline gradient
// along the axis, var the pixel's Poisson plus read variance.
struct LineInformation {
  std::vector<double> fast, slow;
};

LineInformation line_information(const SyntheticSeries& s, const Frame& clean) {
  const SynthOptions& o = s.options();
  const ScanTiming& t = s.scan_timing();
  const Point fast = t.fast_axis(), slow{-fast.y, fast.x};  // in a recorded frame's pixels
  const double read2 = o.read_noise * o.read_noise;
  Frame coeffs = clean;
  bspline_prefilter(coeffs);
  LineInformation out{std::vector<double>(static_cast<std::size_t>(t.lines()), 0.0),
                      std::vector<double>(static_cast<std::size_t>(t.lines()), 0.0)};
  const std::size_t stride = static_cast<std::size_t>(clean.width);
  for (int y = 1; y + 2 < clean.height; ++y)
    for (int x = 1; x + 2 < clean.width; ++x) {
      float v, gx, gy;
      bspline_taps_gradient(coeffs.row(y - 1) + x - 1, stride, 0.0f, 0.0f, v, gx, gy);
      const double var = (o.dose > 0 ? std::max(0.0, static_cast<double>(clean.at(x, y))) : 0.0) + read2;
      if (!(var > 0)) continue;
      const double gf = gx * fast.x + gy * fast.y, gs = gx * slow.x + gy * slow.y;
      const std::size_t line = static_cast<std::size_t>(t.line_of(x, y));
      out.fast[line] += gf * gf / var, out.slow[line] += gs * gs / var;
    }
  return out;
}

// The clean frame's mean pixel variance under s's noise: Poisson (when
// dosed) plus read noise.
double mean_pixel_variance(const SyntheticSeries& s, const Frame& clean) {
  const SynthOptions& o = s.options();
  const double read2 = o.read_noise * o.read_noise;
  double var = 0.0;
  for (const float v : clean.pixels) var += (o.dose > 0 ? std::max(0.0f, v) : 0.0) + read2;
  return var / static_cast<double>(clean.pixels.size());
}

double jitter_floor(const SyntheticSeries& s, bool specimen_learned = false) {
  const SynthOptions& o = s.options();
  if (!(o.jitter > 0)) return 0.0;
  const Point fast = s.scan_timing().fast_axis();
  double sum = 0.0;
  std::size_t count = 0;
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    const Frame clean = s.clean_frame(k);
    const std::vector<double> information = line_information(s, clean).fast;
    double share = 1.0;
    if (specimen_learned) share = learned_specimen_share(clean, mean_pixel_variance(s, clean), s.frame_count(), fast);
    for (const double i : information) sum += 1.0 / (i * share + 1.0 / (o.jitter * o.jitter)), ++count;
  }
  return std::sqrt(sum / static_cast<double>(count));
}

// The jitter's floor with the specimen known but the drift learned from the
// same lines: a Bayesian Cramér–Rao bound for the joint model the truth is
// drawn from. Each line's fast-axis offset is u = f.p(t) + j + n (j the
// jitter, prior sd `jitter`; n the line's noise, variance 1 / I_fast from the
// clean frame as in jitter_floor) and its slow-axis offset s.p(t) + n' (1 /
// I_slow, no jitter), where p is the synthetic drift's random walk (variance
// drift_step^2 per frame time per axis; its smooth part, linear and wobble,
// taken as known: the floor stays a lower bound). A Kalman smoother over the
// lines in time order gives each line's posterior variance P of p; then
// Var(j | all lines) = tau^2 sigma^2 / S + (tau^2 / S)^2 f'Pf, with sigma^2 =
// 1 / I_fast and S = tau^2 + sigma^2. The walk's part a line cannot tell
// from its jitter (the second term) is what jitter_floor leaves out: it
// assumes the drift known.
// With `specimen_learned`, each line's information along either axis is
// first cut to the share a template learned from the other frames keeps
// (learned_specimen_share): the two costs together, the floor of an estimate
// that knows neither the specimen nor the drift (neither cost is the other's:
// one is the template's noise, the other the walk's, so the bound takes both).
double jitter_floor_drift_learned(const SyntheticSeries& s, bool specimen_learned = false) {
  const SynthOptions& o = s.options();
  if (!(o.jitter > 0)) return 0.0;
  const ScanTiming& t = s.scan_timing();
  const double tau2 = o.jitter * o.jitter;
  const double q = o.drift_step * o.drift_step / t.frame_time();  // px^2 per second per axis
  const std::size_t n = s.frame_count(), lines = static_cast<std::size_t>(t.lines());
  std::vector<double> info_fast, info_slow;  // every line of every frame, in time order
  const Point recorded_fast = t.fast_axis(), recorded_slow{-recorded_fast.y, recorded_fast.x};
  for (std::size_t k = 0; k < n; ++k) {
    const Frame clean = s.clean_frame(k);
    LineInformation info = line_information(s, clean);
    if (specimen_learned) {
      const double var = mean_pixel_variance(s, clean);
      const double fast_share = learned_specimen_share(clean, var, n, recorded_fast);
      const double slow_share = learned_specimen_share(clean, var, n, recorded_slow);
      for (double& i : info.fast) i *= fast_share;
      for (double& i : info.slow) i *= slow_share;
    }
    info_fast.insert(info_fast.end(), info.fast.begin(), info.fast.end());
    info_slow.insert(info_slow.end(), info.slow.begin(), info.slow.end());
  }
  // 2x2 symmetric matrices as {a, b, c} = [[a, b], [b, c]].
  using Sym = std::array<double, 3>;
  auto update = [](Sym& p, Point h, double r) {  // one scalar observation h.p with noise variance r
    const double ph0 = p[0] * h.x + p[1] * h.y, ph1 = p[1] * h.x + p[2] * h.y;
    const double sv = h.x * ph0 + h.y * ph1 + r;
    p = {p[0] - ph0 * ph0 / sv, p[1] - ph0 * ph1 / sv, p[2] - ph1 * ph1 / sv};
  };
  std::vector<Sym> filtered(n * lines), predicted(n * lines);
  std::vector<double> times(n * lines);
  Sym p{1e6, 0.0, 1e6};
  for (std::size_t i = 0; i < n * lines; ++i) {
    const std::size_t k = i / lines;
    times[i] = t.line_mid_time(k, static_cast<int>(i % lines));
    if (i > 0) {
      const double dq = q * (times[i] - times[i - 1]);
      p[0] += dq, p[2] += dq;
    }
    predicted[i] = p;
    const Point f = t.fast_axis(k), sl{-f.y, f.x};
    if (info_fast[i] > 0) update(p, f, tau2 + 1.0 / info_fast[i]);
    if (info_slow[i] > 0) update(p, sl, 1.0 / info_slow[i]);
    filtered[i] = p;
  }
  // Rauch-Tung-Striebel, backwards: P_s(i) = P_f(i) + C (P_s(i+1) - P_p(i+1)) C', C = P_f(i) P_p(i+1)^-1.
  std::vector<Sym> smoothed(n * lines);
  smoothed.back() = filtered.back();
  for (std::size_t i = n * lines - 1; i-- > 0;) {
    const Sym& a = filtered[i];
    const Sym& b = predicted[i + 1];
    const double det = b[0] * b[2] - b[1] * b[1];
    const Sym bi{b[2] / det, -b[1] / det, b[0] / det};
    const double c00 = a[0] * bi[0] + a[1] * bi[1], c01 = a[0] * bi[1] + a[1] * bi[2];
    const double c10 = a[1] * bi[0] + a[2] * bi[1], c11 = a[1] * bi[1] + a[2] * bi[2];
    const Sym d{smoothed[i + 1][0] - b[0], smoothed[i + 1][1] - b[1], smoothed[i + 1][2] - b[2]};
    // C d C'
    const double e00 = c00 * d[0] + c01 * d[1], e01 = c00 * d[1] + c01 * d[2];
    const double e10 = c10 * d[0] + c11 * d[1], e11 = c10 * d[1] + c11 * d[2];
    smoothed[i] = {a[0] + e00 * c00 + e01 * c01, a[1] + e00 * c10 + e01 * c11, a[2] + e10 * c10 + e11 * c11};
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < n * lines; ++i) {
    if (!(info_fast[i] > 0)) {
      sum += tau2;
      continue;
    }
    const Point f = t.fast_axis(i / lines);
    const double sigma2 = 1.0 / info_fast[i], S = tau2 + sigma2;
    const Sym& ps = smoothed[i];
    const double fpf = f.x * f.x * ps[0] + 2.0 * f.x * f.y * ps[1] + f.y * f.y * ps[2];
    sum += tau2 * sigma2 / S + (tau2 / S) * (tau2 / S) * fpf;
  }
  return std::sqrt(sum / static_cast<double>(n * lines));
}

// What no registration against the average can see of the jitter: the
// average's own row offsets. A line of frame k shows specimen row
// Y = line + d_slow(t); a shift u(Y) of the average's rows is taken up by
// every line showing Y as j + u(Y), so the lines' estimates can follow the
// truth only up to the mean true jitter of the lines that built row Y (the
// mean the average keeps). Without a prior on the specimen (its rows
// straight), the RMS of that mean over all lines adds to the Cramér–Rao
// floor: sqrt(floor^2 + this^2). Lines are binned by Y to whole pixels; the
// jitter with each frame's mean removed, as the error is measured.
double row_gauge_floor(const SyntheticSeries& s) {
  const SynthOptions& o = s.options();
  if (!(o.jitter > 0)) return 0.0;
  const ScanTiming& t = s.scan_timing();
  const Point fast = t.fast_axis(), slow{fast.y, fast.x};
  std::vector<std::pair<long, double>> rows;  // (bin of Y, jitter) of every line
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    double mean = 0.0;
    for (int l = 0; l < t.lines(); ++l) mean += s.line_jitter(k, l) / t.lines();
    for (int l = 0; l < t.lines(); ++l) {
      const Point d = s.drift_at(t.line_mid_time(k, l));
      rows.push_back({std::lround(l + d.x * slow.x + d.y * slow.y), s.line_jitter(k, l) - mean});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double sum = 0.0;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    double m = 0.0;
    while (j < rows.size() && rows[j].first == rows[i].first) m += rows[j++].second;
    m /= static_cast<double>(j - i);
    sum += m * m * static_cast<double>(j - i);
    i = j;
  }
  return std::sqrt(sum / static_cast<double>(rows.size()));
}

struct Errors {
  double line_drift = 0, rigid_line_drift = 0, jitter = 0, jitter_zero = 0;
  double position = 0;  // each line's fast-axis position, path plus jitter (what the average sees)
  // Its part common to the lines that show one specimen row (binned by the
  // row and the frame's direction): what the average keeps of it as a warp,
  // where errors independent between frames average out.
  double position_common = 0;
};

Errors line_errors(const SyntheticSeries& s, const ScanModel& m, const std::vector<Point>& rigid) {
  const ScanTiming& t = s.scan_timing();
  Errors e;
  // Drift: RMS over every line after removing the mean difference (the gauge).
  auto rms = [&](auto&& estimate) {
    std::vector<Point> d;
    Point mean;
    for (std::size_t k = 0; k < s.frame_count(); ++k)
      for (int l = 0; l < t.lines(); ++l) {
        const Point truth = s.drift_at(t.line_mid_time(k, l)), est = estimate(k, l);
        d.push_back({est.x - truth.x, est.y - truth.y});
        mean.x += d.back().x, mean.y += d.back().y;
      }
    mean.x /= static_cast<double>(d.size()), mean.y /= static_cast<double>(d.size());
    double sum = 0;
    for (const Point& p : d) sum += std::pow(p.x - mean.x, 2) + std::pow(p.y - mean.y, 2);
    return std::sqrt(sum / static_cast<double>(d.size()));
  };
  e.line_drift = rms([&](std::size_t k, int l) { return m.path.at(t.line_mid_time(k, l)); });
  e.rigid_line_drift = rms([&](std::size_t k, int) { return rigid[k]; });
  // Jitter: each frame's mean removed from the truth (it is drift to any estimate).
  double sum = 0, sum0 = 0;
  std::size_t count = 0;
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    double mean = 0;
    for (int l = 0; l < t.lines(); ++l) mean += s.line_jitter(k, l);
    mean /= t.lines();
    for (int l = 0; l < t.lines(); ++l) {
      const double truth = s.line_jitter(k, l) - mean;
      sum += std::pow(m.jitter[k][static_cast<std::size_t>(l)] - truth, 2);
      sum0 += truth * truth;
      ++count;
    }
  }
  e.jitter = std::sqrt(sum / static_cast<double>(count));
  e.jitter_zero = std::sqrt(sum0 / static_cast<double>(count));
  // Position: the path and the jitter together along the fast axis, the
  // truth in the engine's gauge (truth_gauge: frame 0's mean position; a
  // scalar mean removed along each frame's own fast axis cannot take off a
  // 2-D offset when the fast axes differ).
  const Point gauge = truth_gauge(s);
  std::vector<double> dp;
  std::vector<std::pair<std::pair<long, long>, std::size_t>> rows;  // ((direction, row), index into dp)
  double mean = 0;
  for (std::size_t k = 0; k < s.frame_count(); ++k)
    for (int l = 0; l < t.lines(); ++l) {
      const Point fast = t.fast_axis(k);  // the frame's own, in specimen coordinates
      const double tm = t.line_mid_time(k, l);
      const Point est = m.path.at(tm), truth = true_drift(s, tm, gauge);
      const double j = m.jitter.empty() ? 0.0 : m.jitter[k][static_cast<std::size_t>(l)];
      const Point slow{-fast.y, fast.x};
      rows.push_back({{std::lround(fast.x * 8) * 100 + std::lround(fast.y * 8),
                       std::lround(truth.x * slow.x + truth.y * slow.y + l)},
                      dp.size()});
      dp.push_back((est.x - truth.x) * fast.x + (est.y - truth.y) * fast.y + j - s.line_jitter(k, l));
      mean += dp.back();
    }
  mean /= static_cast<double>(dp.size());
  double sp = 0;
  for (const double v : dp) sp += (v - mean) * (v - mean);
  e.position = std::sqrt(sp / static_cast<double>(dp.size()));
  std::sort(rows.begin(), rows.end());
  double sc = 0;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    double bin = 0;
    while (j < rows.size() && rows[j].first == rows[i].first) bin += dp[rows[j++].second] - mean;
    bin /= static_cast<double>(j - i);
    sc += bin * bin * static_cast<double>(j - i);
    i = j;
  }
  e.position_common = std::sqrt(sc / static_cast<double>(dp.size()));
  return e;
}

// lines.csv's standard errors against the truth: the path's error at every
// line (the common offset, its mean over the lines, removed: the gauge the
// sigmas are relative to) over sigma_dx / sigma_dy, and the jitter's (each
// frame's mean jitter removed from the truth, as above) over sigma_jitter.
// Target z-RMS 0.8-1.25.
bool in_calibration_range(double z) { return z >= 0.8 && z <= 1.25; }

// The z-RMS over the cases run, for the closing summary line.
struct LineSigmaRange {
  double path_lo = 1e300, path_hi = 0.0, jitter_lo = 1e300, jitter_hi = 0.0;
  int path_in = 0, path_axes = 0, jitter_in = 0, jitter_cases = 0;
  void add(double zx, double zy, double zj, bool jitter) {
    for (const double z : {zx, zy})
      path_lo = std::min(path_lo, z), path_hi = std::max(path_hi, z), path_in += in_calibration_range(z), ++path_axes;
    if (jitter)
      jitter_lo = std::min(jitter_lo, zj), jitter_hi = std::max(jitter_hi, zj), jitter_in += in_calibration_range(zj),
      ++jitter_cases;
  }
} line_sigma_range;

void print_line_sigma_calibration(const SyntheticSeries& s, const ScanDistortionResult& est) {
  const ScanTiming& t = s.scan_timing();
  std::vector<Point> e;
  Point mean;
  for (std::size_t k = 0; k < s.frame_count(); ++k)
    for (int l = 0; l < t.lines(); ++l) {
      const double tm = t.line_mid_time(k, l);
      const Point est_d = est.model.path.at(tm), truth = s.drift_at(tm);
      e.push_back({est_d.x - truth.x, est_d.y - truth.y});
      mean.x += e.back().x, mean.y += e.back().y;
    }
  mean.x /= static_cast<double>(e.size()), mean.y /= static_cast<double>(e.size());
  double zx = 0, zy = 0, zj = 0, sx = 0, sy = 0, sj = 0;
  std::size_t i = 0, nj = 0;
  // Per scan direction (several directions only): where the path sigma is off.
  struct ByDirection {
    double zx = 0, zy = 0, ex = 0, ey = 0, sx = 0, sy = 0;
    std::size_t n = 0;
  };
  std::map<double, ByDirection> by_direction;
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    double jmean = 0;
    for (int l = 0; l < t.lines(); ++l) jmean += s.line_jitter(k, l) / t.lines();
    ByDirection& bd = by_direction[s.scan_rotation_deg(k)];
    for (int l = 0; l < t.lines(); ++l, ++i) {
      const Point sig = est.path_sigma.sigma(t.line_mid_time(k, l));
      const double ux = (e[i].x - mean.x) / sig.x, uy = (e[i].y - mean.y) / sig.y;
      zx += ux * ux, zy += uy * uy;
      sx += sig.x, sy += sig.y;
      bd.zx += ux * ux, bd.zy += uy * uy, bd.sx += sig.x, bd.sy += sig.y, ++bd.n;
      bd.ex += (e[i].x - mean.x) * (e[i].x - mean.x), bd.ey += (e[i].y - mean.y) * (e[i].y - mean.y);
      if (k < est.jitter_sigma.size() && static_cast<std::size_t>(l) < est.jitter_sigma[k].size() &&
          est.jitter_sigma[k][static_cast<std::size_t>(l)] > 0) {
        const double sj_l = est.jitter_sigma[k][static_cast<std::size_t>(l)];
        const double ej = est.model.jitter[k][static_cast<std::size_t>(l)] - (s.line_jitter(k, l) - jmean);
        zj += (ej / sj_l) * (ej / sj_l), sj += sj_l, ++nj;
      }
    }
  }
  const double n = static_cast<double>(e.size());
  const double path_z[2] = {std::sqrt(zx / n), std::sqrt(zy / n)};
  const double jitter_z = nj ? std::sqrt(zj / static_cast<double>(nj)) : 0.0;
  std::printf(
      "%-52s  line sigma: path z-RMS x %.3f y %.3f %s (mean sigma %.4f, %.4f px; unresolved drift sd %.4f, %.4f px; "
      "common offset sigma %.4f, %.4f px; weights' scale %.3g, %.3g)  jitter z-RMS %.3f %s (mean sigma %.4f px, %zu "
      "lines)\n",
      "", path_z[0], path_z[1], in_calibration_range(path_z[0]) && in_calibration_range(path_z[1]) ? "ok" : "MISS",
      sx / n, sy / n, est.path_sigma.residual_sigma().x, est.path_sigma.residual_sigma().y,
      est.path_sigma.offset_sigma().x, est.path_sigma.offset_sigma().y, est.path_sigma.scale().x,
      est.path_sigma.scale().y, jitter_z,
      nj == 0                          ? "-"
      : in_calibration_range(jitter_z) ? "ok"
                                       : "MISS",
      nj ? sj / static_cast<double>(nj) : 0.0, nj);
  line_sigma_range.add(path_z[0], path_z[1], jitter_z, nj > 0);
  if (by_direction.size() > 1)
    for (const auto& [deg, bd] : by_direction) {
      const double m = static_cast<double>(bd.n);
      std::printf(
          "%-52s    frames at %g deg: path z-RMS x %.3f y %.3f (error RMS %.4f, %.4f px; mean sigma %.4f, %.4f px)\n",
          "", deg, std::sqrt(bd.zx / m), std::sqrt(bd.zy / m), std::sqrt(bd.ex / m), std::sqrt(bd.ey / m), bd.sx / m,
          bd.sy / m);
    }
}

// The real ABF image from the optional sample data (the folder named by
// $DRIFTSCAN_SAMPLE_DATA; README, "Sample data"), or nullptr: its cases are left out.
std::shared_ptr<const Frame> real_content() {
  static const std::shared_ptr<const Frame> content = []() -> std::shared_ptr<const Frame> {
    const char* data = std::getenv("DRIFTSCAN_SAMPLE_DATA");
    if (!data || !*data) {
      std::fprintf(stderr, "# real-content cases left out: DRIFTSCAN_SAMPLE_DATA is not set\n");
      return nullptr;
    }
    const fs::path p = fs::path(data) / "stem_abf_series.tif";
    if (!fs::exists(p)) {
      std::fprintf(stderr, "# real-content cases left out: %s is absent\n", p.c_str());
      return nullptr;
    }
    return std::make_shared<const Frame>(TiffSeries::open(p.string())->frame(0));
  }();
  return content;
}

std::vector<Case> make_cases(std::size_t frames, int size, std::uint32_t seed) {
  SynthOptions base;
  base.frames = frames;
  base.width = base.height = size;
  base.period = 9.0;
  base.scan_dwell = 2e-6;
  base.scan_line_flyback = 0.25;
  base.scan_frame_flyback = 0.05;
  base.drift_wobble_period = 6.0;
  base.seed = seed;
  std::vector<Case> cases;
  auto add = [&](const std::string& name, double vx, double vy, double wobble, double walk, double jitter, double dose,
                 bool content) {
    Case c{name, base};
    c.synth.drift_linear_x = vx, c.synth.drift_linear_y = vy, c.synth.drift_wobble = wobble;
    c.synth.drift_step = walk, c.synth.jitter = jitter, c.synth.dose = dose;
    if (content) c.synth.content = real_content();
    if (content && !c.synth.content) return;  // no sample data
    cases.push_back(c);
  };
  add("hex drift 3px/frame wobble jitter 0.5 dose 6", 3.0, 1.5, 1.5, 0.3, 0.5, 6, false);
  add("hex drift 5px/frame wobble jitter 0.3 dose 4", 5.0, -2.0, 1.0, 0.3, 0.3, 4, false);
  // 5.4 px per frame is more than half the 9 px period: consecutive frames
  // of a lattice are then ambiguous and the rigid pairs jump a period. The
  // same drift on a 14 px lattice is what a user with that drift would record.
  cases.back().synth.period = 14.0;
  cases.back().name = "hex p14 drift 5px/frame wobble jitter 0.3 dose 4";
  add("hex drift 1px/frame no jitter dose 10", 1.0, 0.5, 0.5, 0.2, 0.0, 10, false);
  add("real ABF content drift 3px/frame jitter 0.5 dose 10", 3.0, 1.5, 1.5, 0.3, 0.5, 10, true);
  // Jitter 0.2 px at dose 10: where the frames hold enough of each line's
  // position for the 0.1 px jitter target (at 512²; at 256² the floor is
  // about 0.1 px itself).
  add("hex drift 3px/frame wobble jitter 0.2 dose 10", 3.0, 1.5, 1.5, 0.3, 0.2, 10, false);
  add("real ABF content drift 3px/frame jitter 0.2 dose 10", 3.0, 1.5, 1.5, 0.3, 0.2, 10, true);
  // Fly-back hysteresis: each line's start bent along the fast axis by
  // 2 px x (0.5 to 1.5, drawn per frame), decaying over 8% of the line;
  // corrected without and with the line field.
  add("hex drift 3px/frame jitter 0.3 dose 10 hysteresis 2px", 3.0, 1.5, 1.5, 0.3, 0.3, 10, false);
  cases.back().synth.scan_hysteresis = 2.0;
  cases.back().synth.scan_hysteresis_length = 0.08 * size;
  cases.back().line_field_knots = 0;
  cases.push_back(cases.back());
  cases.back().name += ", line field";
  cases.back().line_field_knots = 8;
  // Frames scanned in several directions (cases 10-15): orthogonal pairs
  // (0, 90) and revolving scans (0, 90, 180, 270); one orthogonal pair alone
  // (2 frames: no third frame to lean on). Each is also run with the same
  // frames scanned in one direction (its single-direction twin).
  auto turned = [&](const std::string& name, std::vector<double> rotation, double jitter, double dose, bool content,
                    std::size_t count) {
    add(name, 3.0, 1.5, 1.5, 0.3, jitter, dose, content);
    if (cases.back().name != name) return;  // no sample data
    cases.back().synth.scan_rotation_deg = std::move(rotation);
    if (count) cases.back().synth.frames = count;
  };
  turned("orthogonal pairs 0/90 hex jitter 0.5 dose 6", {0, 90}, 0.5, 6, false, 0);
  turned("revolving 0/90/180/270 hex jitter 0.5 dose 6", {0, 90, 180, 270}, 0.5, 6, false, 0);
  turned("revolving 0/90/180/270 hex jitter 0.2 dose 10", {0, 90, 180, 270}, 0.2, 10, false, 0);
  turned("orthogonal pairs 0/90 real ABF jitter 0.5 dose 10", {0, 90}, 0.5, 10, true, 0);
  turned("revolving 0/90/180/270 real ABF jitter 0.3 dose 4", {0, 90, 180, 270}, 0.3, 4, true, 0);
  turned("one orthogonal pair 0/90 hex jitter 0.3 dose 10", {0, 90}, 0.3, 10, false, 2);
  // Turns off the pixel grid (cases 16-17): the frames turned back leave
  // corners uncovered; rigid registration keeps to the square all cover.
  turned("revolving 0/45/90/135 hex jitter 0.3 dose 10", {0, 45, 90, 135}, 0.3, 10, false, 0);
  turned("pairs 0/30 real ABF jitter 0.3 dose 10", {0, 30}, 0.3, 10, true, 0);
  return cases;
}

// The rigid result averaged as the others (specimen coordinates, the same
// interpolation), one offset per frame: frame 0 at d(its mid time) (in the
// engine's gauge, as the oracle).
SpecimenImage rigid_average(const SyntheticSeries& s, const std::vector<Frame>& held, const std::vector<Point>& rigid) {
  const ScanTiming& timing = s.scan_timing();
  const Point d0 = true_drift(s, timing.frame_mid_time(0), truth_gauge(s));
  std::vector<FrameScanMap> maps;
  SpecimenExtent extent;
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    maps.push_back(FrameScanMap::rigid(timing, {rigid[k].x + d0.x, rigid[k].y + d0.y}, k));
    extent.merge(frame_extent(maps.back(), timing));
  }
  const SpecimenGrid grid = SpecimenGrid::covering(extent, timing);
  std::vector<double> sum(static_cast<std::size_t>(grid.width) * grid.height), cover(sum.size());
  for (std::size_t k = 0; k < s.frame_count(); ++k)
    accumulate_in_specimen_coordinates(held[k], maps[k], grid, sum, cover);
  return finish_specimen_average(grid, sum, cover);
}

// The line fields of `model` against the synthetic series' hysteresis.
void print_line_field_errors(const SyntheticSeries& s, const ScanModel& model) {
  const ScanTiming& timing = s.scan_timing();
  // Each frame's line field against the truth over its first quarter
  // line (where hysteresis lives); and apart, the mean over the frames
  // (the shared part) and each frame's deviation from it.
  const int samples = timing.samples_per_line(), first = std::max(1, samples / 4);
  const std::size_t n = s.frame_count();
  std::vector<std::vector<double>> fit(n), truth(n);
  std::vector<double> mean_est(static_cast<std::size_t>(first), 0.0), mean_truth = mean_est;
  for (std::size_t k = 0; k < n; ++k) {
    fit[k] = k < model.field.size() ? model.field_basis.tabulate(model.field[k]) : std::vector<double>{};
    fit[k].resize(static_cast<std::size_t>(samples), 0.0);
    truth[k].resize(static_cast<std::size_t>(first));
    for (int x = 0; x < first; ++x) {
      truth[k][static_cast<std::size_t>(x)] = s.line_field(k, x);
      mean_est[static_cast<std::size_t>(x)] += fit[k][static_cast<std::size_t>(x)] / static_cast<double>(n);
      mean_truth[static_cast<std::size_t>(x)] += truth[k][static_cast<std::size_t>(x)] / static_cast<double>(n);
    }
  }
  double err = 0, zero = 0, shared_err = 0, shared_zero = 0, own_err = 0, own_zero = 0;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t x = 0; x < static_cast<std::size_t>(first); ++x) {
      const double e = fit[k][x], t = truth[k][x], de = e - mean_est[x], dt = t - mean_truth[x];
      err += (e - t) * (e - t), zero += t * t, own_err += (de - dt) * (de - dt), own_zero += dt * dt;
      if (k == 0)
        shared_err += (mean_est[x] - mean_truth[x]) * (mean_est[x] - mean_truth[x]),
            shared_zero += mean_truth[x] * mean_truth[x];
    }
  const double count = static_cast<double>(n) * first;
  std::printf(
      "%-52s  line field error %.4f px (%.4f if none) over each line's first %d samples: shared part %.4f px "
      "(%.4f if none), each frame's own %.4f px (%.4f if none)\n",
      "", std::sqrt(err / count), std::sqrt(zero / count), first, std::sqrt(shared_err / first),
      std::sqrt(shared_zero / first), std::sqrt(own_err / count), std::sqrt(own_zero / count));
}

// The clean specimen on `grid`'s pixels (specimen coordinates, the engine's
// gauge): the generator's coordinates are the engine's plus truth_gauge.
// Rendered without it, a template stood about a pixel off the frames placed
// by the true model (the diagnostics' band offsets read +0.9 px) and its
// line fits lost to that offset, not to the estimator.
Frame clean_specimen_on(const SyntheticSeries& s, const SpecimenImage& grid) {
  const Point gauge = truth_gauge(s);
  std::vector<Point> points;
  for (int j = 0; j < grid.image.height; ++j)
    for (int i = 0; i < grid.image.width; ++i)
      points.push_back({grid.origin.x + i + gauge.x, grid.origin.y + j + gauge.y});
  return s.specimen(points, grid.image.width, grid.image.height);
}

// Where the line fits lose against the Cramer-Rao floor: each line's offset
// fitted once (from no jitter, as the first round) under the true path
// against three templates — the frames averaged under the true model through
// the Wiener filter (what the rounds converge to at best), the same without
// the filter, and the clean specimen itself (what the floor assumes) — each
// line's error with its frame's mean removed (that is drift), RMS.
void print_template_diagnostic(const SyntheticSeries& s, const FrameVector& frames, const ScanModel& oracle,
                               const ScanDistortionSettings& settings) {
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  ScanModel start = oracle;
  for (auto& row : start.jitter) std::fill(row.begin(), row.end(), 0.0);
  auto error_with = [&](const ScanDistortionSteps& steps) {
    double sum = 0.0;
    std::size_t count = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const ScanDistortionSteps::FrameFit fit = steps.fit_frame(frames.frame(k), k, start);
      if (fit.line_offset.size() != static_cast<std::size_t>(t.lines())) continue;
      std::vector<double> e;
      double mean = 0.0;
      for (int l = 0; l < t.lines(); ++l) {
        const double v = fit.line_offset[static_cast<std::size_t>(l)] - s.line_jitter(k, l);
        if (!std::isfinite(v)) continue;
        e.push_back(v), mean += v;
      }
      mean /= static_cast<double>(std::max<std::size_t>(1, e.size()));
      for (const double v : e) sum += (v - mean) * (v - mean), ++count;
    }
    return count ? std::sqrt(sum / static_cast<double>(count)) : 0.0;
  };
  AverageNoise noise;
  std::vector<FrameContribution> own;
  const SpecimenImage average = average_in_specimen_coordinates(frames, t, oracle, &noise, &own);
  ScanDistortionSteps filtered(t, settings, n);
  filtered.set_template(average, oracle.path, noise, own);
  ScanDistortionSettings plain_settings = settings;
  plain_settings.filter_template = false;
  ScanDistortionSteps plain(t, plain_settings, n);
  plain.set_template(average, oracle.path, noise, own);
  // The clean specimen on the same grid; a coverage so large that taking a
  // frame's own samples out changes nothing.
  SpecimenImage clean = average;
  clean.image = clean_specimen_on(s, average);
  for (std::size_t i = 0; i < clean.coverage.pixels.size(); ++i)
    clean.coverage.pixels[i] = average.coverage.pixels[i] > 0 ? 1e9f : 0.0f;
  ScanDistortionSteps exact(t, plain_settings, n);
  exact.set_template(clean, oracle.path);
  // The noise-free frames averaged under the true model: what resampling
  // each frame onto the specimen grid costs, noise aside.
  std::vector<Frame> noiseless;
  for (std::size_t k = 0; k < n; ++k) noiseless.push_back(s.clean_frame(k));
  std::vector<FrameContribution> own_clean;
  const SpecimenImage clean_average =
      average_in_specimen_coordinates(FrameVector(std::move(noiseless)), t, oracle, nullptr, &own_clean);
  ScanDistortionSteps resampled(t, plain_settings, n);
  resampled.set_template(clean_average, oracle.path, AverageNoise{}, own_clean);
  std::printf(
      "%-52s  line fits under the true path against: the true-model average %.4f px (unfiltered %.4f), "
      "the clean specimen %.4f px, the noise-free frames' true-model average %.4f px\n",
      "", error_with(filtered), error_with(plain), error_with(exact), error_with(resampled));
}

// The frames in one cycle of scan directions (1 for one direction).
std::size_t direction_cycle(const SyntheticSeries& s) {
  std::size_t cycle = 1;
  while (cycle < s.frame_count() && std::fabs(s.scan_rotation_deg(cycle) - s.scan_rotation_deg(0)) > 1e-9) ++cycle;
  return cycle;
}

// The true model with, on each line, an error as large as the estimate's
// (each frame's RMS, its mean off) but drawn independently of the data: if
// a template built from it matches the true-model one, the estimate's
// template loses by where its errors come from (the fitted frames' own
// noise), not by their size.
ScanModel with_independent_errors(const SyntheticSeries& s, const ScanModel& est, const ScanModel& oracle) {
  const std::size_t n = s.frame_count(), lines = static_cast<std::size_t>(s.scan_timing().lines());
  ScanModel scrambled = oracle;
  std::mt19937 draw(12345);
  for (std::size_t k = 0; k < n; ++k) {
    double tm = 0, em = 0, e2 = 0;
    for (std::size_t l = 0; l < lines; ++l) tm += s.line_jitter(k, static_cast<int>(l)) / static_cast<double>(lines);
    for (std::size_t l = 0; l < lines; ++l) em += est.jitter[k][l] / static_cast<double>(lines);
    for (std::size_t l = 0; l < lines; ++l) {
      const double e = (est.jitter[k][l] - em) - (s.line_jitter(k, static_cast<int>(l)) - tm);
      e2 += e * e / static_cast<double>(lines);
    }
    std::normal_distribution<double> error(0.0, std::sqrt(e2));
    for (std::size_t l = 0; l < lines; ++l) scrambled.jitter[k][l] += error(draw);
  }
  return scrambled;
}

// The true model with the estimate's own errors (each frame's mean off), but
// each frame's moved to the next frame of its direction (a direction cycle
// on): the errors' pattern along a frame kept, their lining up between
// frames over the same specimen rows broken. If a template built from it
// matches the independent errors, the estimate's template loses by errors
// shared across frames at the same place; if it matches its own, by each
// frame's own error pattern.
ScanModel with_errors_a_cycle_on(const SyntheticSeries& s, const ScanModel& est, const ScanModel& oracle) {
  const std::size_t n = s.frame_count(), lines = static_cast<std::size_t>(s.scan_timing().lines());
  const std::size_t cycle = direction_cycle(s);
  ScanModel moved = oracle;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t from = k + cycle < n ? k + cycle : k % cycle;  // the same direction, a cycle on
    double tm = 0, em = 0;
    for (std::size_t l = 0; l < lines; ++l)
      tm += s.line_jitter(from, static_cast<int>(l)) / static_cast<double>(lines),
          em += est.jitter[from][l] / static_cast<double>(lines);
    for (std::size_t l = 0; l < lines; ++l)
      moved.jitter[k][l] += (est.jitter[from][l] - em) - (s.line_jitter(from, static_cast<int>(l)) - tm);
  }
  return moved;
}

// Cross-fitting (K folds of whole direction cycles): each frame fitted
// against a template whose other folds' jitter was fitted again without
// its fold (a round against the average of the other folds alone), so
// that their errors do not hold its own noise; its own fold's as
// estimated. Scored as the further round above (the estimate's path).
void print_cross_fitted_rounds(const SyntheticSeries& s, const FrameVector& frames, const ScanModel& est,
                               const ScanDistortionSettings& settings) {
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  const std::size_t lines = static_cast<std::size_t>(t.lines());
  const double tau2 = s.options().jitter * s.options().jitter;
  const std::size_t cycle = direction_cycle(s);
  for (const std::size_t folds : {std::size_t{2}, std::size_t{4}}) {
    const auto started = std::chrono::steady_clock::now();
    auto fold_of = [&](std::size_t k) { return (k / cycle) % folds; };
    double sums[3] = {}, count = 0;
    ScanModel cross = est;
    std::vector<std::vector<std::vector<double>>> without(folds);
    for (std::size_t f = 0; f < folds; ++f) {
      ScanDistortionSteps aux(t, settings, n);
      for (std::size_t k = 0; k < n; ++k)
        if (fold_of(k) == f) aux.leave_out(k);
      AverageNoise an;
      std::vector<FrameContribution> own;
      SpecimenImage average = average_in_specimen_coordinates(frames, t, est, &an, &own, &aux.left_out_frames(),
                                                              aux.template_from_sample());
      aux.set_template(std::move(average), est.path, std::move(an), std::move(own));
      std::vector<ScanDistortionSteps::FrameFit> fits(n);
      std::vector<ScanDistortionSteps::JitterSpread> spreads(n);
      for (std::size_t k = 0; k < n; ++k)
        if (fold_of(k) != f) {
          fits[k] = aux.fit_frame(frames.frame(k), k, est);
          spreads[k] = aux.jitter_spread(fits[k], k, est.path, est.path);
        }
      const std::vector<double> tau = aux.pooled_jitter_variances(spreads);
      without[f] = est.jitter;
      for (std::size_t k = 0; k < n; ++k)
        if (fold_of(k) != f)
          without[f][k] = aux.finish_jitter(fits[k], k, est.path, est.path, nullptr, nullptr, tau[k]);
    }
    for (std::size_t f = 0; f < folds; ++f) {
      ScanModel m = est;
      m.jitter = without[f];
      ScanDistortionSteps steps(t, settings, n);
      AverageNoise an;
      std::vector<FrameContribution> own;
      SpecimenImage average =
          average_in_specimen_coordinates(frames, t, m, &an, &own, nullptr, steps.template_from_sample());
      steps.set_template(std::move(average), est.path, std::move(an), std::move(own));
      for (std::size_t k = 0; k < n; ++k) {
        if (fold_of(k) != f) continue;
        const ScanDistortionSteps::FrameFit fit = steps.fit_frame(frames.frame(k), k, est);
        if (fit.line_offset.size() != lines) continue;
        const std::vector<double> shrunk = steps.finish_jitter(fit, k, est.path, est.path);
        cross.jitter[k] = shrunk;
        double tm = 0, om = 0, c = 0;
        for (std::size_t l = 0; l < lines; ++l)
          tm += s.line_jitter(k, static_cast<int>(l)) / static_cast<double>(lines);
        for (std::size_t l = 0; l < lines; ++l)
          if (std::isfinite(fit.line_variance[l])) om += fit.line_offset[l], c += 1;
        om /= std::max(1.0, c);
        for (std::size_t l = 0; l < lines; ++l) {
          const double truth = s.line_jitter(k, static_cast<int>(l)) - tm, v = fit.line_variance[l];
          const double raw = std::isfinite(v) ? fit.line_offset[l] - om : 0.0;
          const double g = std::isfinite(v) ? tau2 / (tau2 + v) : 0.0;
          sums[0] += (raw - truth) * (raw - truth), sums[1] += (shrunk[l] - truth) * (shrunk[l] - truth),
              sums[2] += (g * raw - truth) * (g * raw - truth), count += 1;
        }
      }
    }
    char what[96];
    std::snprintf(what, sizeof what, "jitter, a further round, cross-fitted template (%zu folds)", folds);
    std::printf("%-52s  %-58s raw %.4f  engine-shrunk %.4f  posterior (tau true) %.4f  (%.2f s wall)\n", "", what,
                std::sqrt(sums[0] / count), std::sqrt(sums[1] / count), std::sqrt(sums[2] / count),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
}

// Where the shrunk jitter error comes from (the engine's last model against
// the truth): one more round's line fits under a given model and template,
// each scored three ways against the true jitter (each frame's mean taken
// off both, as the error is measured): raw (the least-squares offsets),
// shrunk as the engine does (finish_jitter, the path unchanged) and shrunk
// with the true jitter variance (tau = the draw's jitter) and the lines'
// measured variances (the textbook posterior mean). The fits: the engine's
// model and template (a further round); the true path with the estimate's
// jitter, the template built from that model; the same against the true
// model's average; the same against the clean specimen.
void print_jitter_diagnostic(const SyntheticSeries& s, const FrameVector& frames, const ScanModel& est,
                             const ScanModel& oracle, const ScanDistortionSettings& settings) {
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  const std::size_t lines = static_cast<std::size_t>(t.lines());
  const double tau2 = s.options().jitter * s.options().jitter;
  struct Score {
    double raw = 0, engine = 0, posterior = 0, gain = 0;
  };
  auto score = [&](const ScanDistortionSteps& steps, const ScanModel& model, bool calibration = false) {
    double sums[3] = {}, count = 0, gain = 0;
    std::vector<std::array<double, 3>> cal;  // (v, raw error^2, truth^2)
    double reg[5] = {};                      // raw ~ alpha truth + beta previous: normal equations
    for (std::size_t k = 0; k < n; ++k) {
      const ScanDistortionSteps::FrameFit fit = steps.fit_frame(frames.frame(k), k, model);
      if (fit.line_offset.size() != lines) continue;
      const std::vector<double> shrunk = steps.finish_jitter(fit, k, model.path, model.path);
      double tm = 0, om = 0, c = 0;
      for (std::size_t l = 0; l < lines; ++l) tm += s.line_jitter(k, static_cast<int>(l)) / static_cast<double>(lines);
      for (std::size_t l = 0; l < lines; ++l)
        if (std::isfinite(fit.line_variance[l])) om += fit.line_offset[l], c += 1;
      om /= std::max(1.0, c);
      for (std::size_t l = 0; l < lines; ++l) {
        const double truth = s.line_jitter(k, static_cast<int>(l)) - tm;
        const double v = fit.line_variance[l];
        const double raw = std::isfinite(v) ? fit.line_offset[l] - om : 0.0;
        const double g = std::isfinite(v) ? tau2 / (tau2 + v) : 0.0;
        sums[0] += (raw - truth) * (raw - truth);
        sums[1] += (shrunk[l] - truth) * (shrunk[l] - truth);
        sums[2] += (g * raw - truth) * (g * raw - truth);
        gain += g, count += 1;
        if (calibration && std::isfinite(v)) {
          cal.push_back({v, (raw - truth) * (raw - truth), truth * truth});
          const double prev = model.jitter[k][l];
          reg[0] += truth * truth, reg[1] += truth * prev, reg[2] += prev * prev, reg[3] += truth * raw,
              reg[4] += prev * raw;
        }
      }
    }
    if (calibration && !cal.empty()) {
      const double det = reg[0] * reg[2] - reg[1] * reg[1];
      std::printf("%-52s  raw offset ~ %.3f truth + %.3f previous estimate (raw ~ %.3f truth alone)\n", "",
                  (reg[3] * reg[2] - reg[4] * reg[1]) / det, (reg[4] * reg[0] - reg[3] * reg[1]) / det,
                  reg[3] / reg[0]);
      std::sort(cal.begin(), cal.end());
      const std::size_t bins = 10;
      std::printf("%-52s  by the line's variance v (deciles): mean v / mean raw error^2 / mean truth^2:", "");
      for (std::size_t b = 0; b < bins; ++b) {
        double m[3] = {};
        const std::size_t i0 = b * cal.size() / bins, i1 = (b + 1) * cal.size() / bins;
        for (std::size_t i = i0; i < i1; ++i)
          for (int q = 0; q < 3; ++q) m[q] += cal[i][static_cast<std::size_t>(q)] / static_cast<double>(i1 - i0);
        std::printf("  %.4f/%.4f/%.4f", m[0], m[1], m[2]);
      }
      std::printf("\n");
    }
    Score r;
    r.raw = std::sqrt(sums[0] / count), r.engine = std::sqrt(sums[1] / count), r.posterior = std::sqrt(sums[2] / count),
    r.gain = gain / count;
    return r;
  };
  auto with_template = [&](const ScanModel& built_with, const ScanModel& fitted) {
    ScanDistortionSteps steps(t, settings, n);
    AverageNoise noise;
    std::vector<FrameContribution> own;
    SpecimenImage average =
        average_in_specimen_coordinates(frames, t, built_with, &noise, &own, nullptr, steps.template_from_sample());
    steps.set_template(std::move(average), built_with.path, std::move(noise), std::move(own));
    return score(steps, fitted, &built_with == &est);
  };
  ScanModel true_path = est;
  true_path.path = oracle.path;
  const Score a = with_template(est, est);
  const Score b = with_template(true_path, true_path);
  const Score c = with_template(oracle, true_path);
  // The clean specimen (coverage so large that a frame's own samples change nothing).
  AverageNoise noise;
  std::vector<FrameContribution> own;
  SpecimenImage clean = average_in_specimen_coordinates(frames, t, oracle, &noise, &own);
  clean.image = clean_specimen_on(s, clean);
  for (float& v : clean.coverage.pixels) v = v > 0 ? 1e9f : 0.0f;
  ScanDistortionSettings plain = settings;
  plain.filter_template = false;
  ScanDistortionSteps exact(t, plain, n);
  exact.set_template(clean, oracle.path);
  const Score d = score(exact, true_path);
  auto line = [](const char* what, const Score& r) {
    std::printf("%-52s  %-58s raw %.4f  engine-shrunk %.4f  posterior (tau true) %.4f  (mean gain %.3f)\n", "", what,
                r.raw, r.engine, r.posterior, r.gain);
  };
  line("jitter, a further round: the estimate's model", a);
  line("  the true path, the estimate's jitter, its template", b);
  line("  the true path, the estimate's jitter, true-model template", c);
  line("  the true path, the estimate's jitter, template true + independent errors",
       with_template(with_independent_errors(s, est, oracle), true_path));
  line("  the true path, the estimate's jitter, template true + errors moved a cycle on",
       with_template(with_errors_a_cycle_on(s, est, oracle), true_path));
  line("  the true path, the estimate's jitter, clean specimen", d);
  print_cross_fitted_rounds(s, frames, est, settings);
}

// Experiment: each specimen row's mean jitter (lines whose fast axes are
// parallel, binned by where across that axis they run) taken off by
// empirical Bayes.
ScanModel row_corrected(const SyntheticSeries& s, const ScanModel& est, double bin_px) {
  const ScanTiming& t = s.scan_timing();
  ScanModel m = est;
  struct Item {
    long group, bin;
    std::size_t k;
    int l;
    double sign;
  };
  std::vector<Item> items;
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    const Point f = t.fast_axis(k);
    const bool flip = f.x < -1e-6 || (std::fabs(f.x) <= 1e-6 && f.y < 0);
    const Point c = flip ? Point{-f.x, -f.y} : f;
    const Point perp{-c.y, c.x};
    const long group = std::lround(std::atan2(c.y, c.x) * 180.0 / kPi);
    for (int l = 0; l < t.lines(); ++l) {
      const Point mid = t.turn(k).apply(0.5 * t.samples_per_line(), l + 0.5);
      const Point d = est.path.at(t.line_mid_time(k, l));
      const double across = (mid.x + d.x) * perp.x + (mid.y + d.y) * perp.y;
      items.push_back({group, std::lround(std::floor(across / bin_px)), k, l, flip ? -1.0 : 1.0});
    }
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.group != b.group ? a.group < b.group : a.bin < b.bin; });
  auto value = [&](const Item& it) { return it.sign * m.jitter[it.k][static_cast<std::size_t>(it.l)]; };
  // Pass 1: within-bin variance A and the variance of the bins' means.
  struct Bin {
    std::size_t i0, i1;
    double mean;
  };
  std::vector<Bin> bins;
  double within = 0, within_n = 0;
  for (std::size_t i = 0; i < items.size();) {
    std::size_t j = i;
    double sum = 0;
    while (j < items.size() && items[j].group == items[i].group && items[j].bin == items[i].bin)
      sum += value(items[j++]);
    const double mean = sum / static_cast<double>(j - i);
    for (std::size_t q = i; q < j; ++q) within += std::pow(value(items[q]) - mean, 2);
    within_n += static_cast<double>(j - i - 1);
    bins.push_back({i, j, mean});
    i = j;
  }
  const double A = within / std::max(1.0, within_n);
  double mean_sq = 0, expected = 0, nb = 0;
  for (const Bin& b : bins)
    if (b.i1 - b.i0 >= 2) mean_sq += b.mean * b.mean, expected += A / static_cast<double>(b.i1 - b.i0), nb += 1;
  const double E = std::max(0.0, (mean_sq - expected) / nb);
  std::printf("%-52s  rows of %.2f px: %zu bins, within-row variance %.4f, the rows' common variance %.4f\n", "",
              bin_px, bins.size(), A, E);
  for (const Bin& b : bins) {
    const double m_b = static_cast<double>(b.i1 - b.i0);
    const double c = E > 0 ? E / (E + A / m_b) : 0.0;
    for (std::size_t q = b.i0; q < b.i1; ++q)
      m.jitter[items[q].k][static_cast<std::size_t>(items[q].l)] -= items[q].sign * c * b.mean;
  }
  return m;
}

// Frame 0's first bands, fitted once more (a round's fit_frame) under a given
// model against the template built with it: each band's sample (path plus
// the band's offset) minus the model's path at the band's time, i.e. the
// offset the band asks of the model. Under the true model (its average as
// template) every band should ask ~0; under the estimate's, what the
// estimate's next round would move.
void print_first_band_diagnostic(const SyntheticSeries& s, const FrameVector& frames, const ScanModel& est,
                                 const ScanModel& oracle, const ScanDistortionSettings& settings) {
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  // The model's position of band b (its path at the band's time and its lines' mean jitter).
  auto band_position = [&](const ScanModel& m, std::size_t k, std::size_t b, double time) {
    const int l0 = static_cast<int>(b) * settings.band_lines, l1 = std::min(t.lines(), l0 + settings.band_lines);
    double j = 0;
    for (int l = l0; l < l1; ++l) j += m.jitter[k][static_cast<std::size_t>(l)] / (l1 - l0);
    const Point p = m.path.at(time), f = t.fast_axis(k);
    return Point{p.x + j * f.x, p.y + j * f.y};
  };
  // Frames 0 and n/2: the first 4 bands' offsets asked of `built_with` against steps' template.
  auto print_band_offsets = [&](const ScanDistortionSteps& steps, const ScanModel& built_with, const char* what) {
    std::printf("%-52s    %-36s", "", what);
    for (const std::size_t k : {std::size_t{0}, n / 2}) {
      const ScanDistortionSteps::FrameFit fit = steps.fit_frame(frames.frame(k), k, built_with);
      std::printf("  frame %zu:", k);
      for (std::size_t b = 0; b < std::min<std::size_t>(4, fit.bands.size()); ++b) {
        const Point p = band_position(built_with, k, b, fit.bands[b].t);
        std::printf(" %+.2f %+.2f", fit.bands[b].dx - p.x, fit.bands[b].dy - p.y);
      }
    }
    std::printf("\n");
  };
  auto offsets = [&](const ScanModel& built_with, const char* what, bool clean) {
    ScanDistortionSteps steps(t, settings, n);
    AverageNoise noise;
    std::vector<FrameContribution> own;
    SpecimenImage average =
        average_in_specimen_coordinates(frames, t, built_with, &noise, &own, nullptr, steps.template_from_sample());
    if (clean) {
      average.image = clean_specimen_on(s, average);
      for (float& v : average.coverage.pixels) v = v > 0 ? 1e9f : 0.0f;
      ScanDistortionSettings plain = settings;
      plain.filter_template = false;
      ScanDistortionSteps exact(t, plain, n);
      exact.set_template(std::move(average), built_with.path);
      print_band_offsets(exact, built_with, what);
      return;
    }
    steps.set_template(std::move(average), built_with.path, std::move(noise), std::move(own));
    {
      const ScanDistortionSteps::FrameFit f0 = steps.fit_frame(frames.frame(0), 0, built_with);
      std::printf("%-52s    %-36s frame 0's lines fitted per band (of %d):", "", what, settings.band_lines);
      for (int b = 0; b < 4; ++b) {
        int fitted = 0;
        for (int l = b * settings.band_lines; l < (b + 1) * settings.band_lines; ++l)
          fitted += f0.line_variance.size() > static_cast<std::size_t>(l) &&
                    std::isfinite(f0.line_variance[static_cast<std::size_t>(l)]);
        std::printf(" %d", fitted);
      }
      double fitted_mean = 0, fitted_count = 0;
      for (int l = 0; l < settings.band_lines; ++l)
        if (f0.line_variance.size() > static_cast<std::size_t>(l) &&
            std::isfinite(f0.line_variance[static_cast<std::size_t>(l)]))
          fitted_mean += s.line_jitter(0, l), fitted_count += 1;
      std::printf("; the first band's fitted lines' true mean jitter %+.3f px",
                  fitted_mean / std::max(1.0, fitted_count));
      std::printf("\n");
    }
    print_band_offsets(steps, built_with, what);
  };
  std::printf("%-52s  frame 0's first 4 bands' mean jitter, true / estimated (px):", "");
  for (int b = 0; b < 4; ++b) {
    double tj = 0, ej = 0;
    for (int l = b * settings.band_lines; l < (b + 1) * settings.band_lines; ++l)
      tj += s.line_jitter(0, l) / settings.band_lines,
          ej += est.jitter[0][static_cast<std::size_t>(l)] / settings.band_lines;
    std::printf("  %+.3f / %+.3f", tj, ej);
  }
  double all = 0;
  for (int l = 0; l < t.lines(); ++l) all += s.line_jitter(0, l) / t.lines();
  std::printf("  (frame's true mean %+.3f)\n", all);
  std::printf("%-52s  the first 4 bands' offsets from the model (x y, px), one more fit:\n", "");
  offsets(oracle, "the true model, its average", false);
  offsets(oracle, "the true model, the clean specimen", true);
  offsets(est, "the estimate, its average", false);
}

// Line l of frame k: the estimate's position (path at the line's middle and
// jitter along the fast axis) minus the true one (`gauge`: truth_gauge(s)).
Point line_position_error(const SyntheticSeries& s, const ScanModel& est, std::size_t k, int l, Point gauge) {
  const ScanTiming& t = s.scan_timing();
  const Point f = t.fast_axis(k);
  const double tm = t.line_mid_time(k, l);
  const Point pe = est.path.at(tm), pt = true_drift(s, tm, gauge);
  const double je = k < est.jitter.size() ? est.jitter[k][static_cast<std::size_t>(l)] : 0.0;
  const double dj = je - s.line_jitter(k, l);
  return {pe.x - pt.x + dj * f.x, pe.y - pt.y + dj * f.y};
}

// The estimate's gauge against the truth's: the mean over every line of the
// difference of its position (path and jitter) from the true one. Both put
// frame 0's mean position at 0 (truth_gauge), so this is the estimate's error
// over frame 0 against its error over the series (with d(0) = 0, before
// branch rotated-11, it was its path's edge error, up to a few tenths of a
// pixel): a shift of the whole average,
// which the scorer's affine fit takes out. It still moves every frame's
// samples against the specimen grid by the same fraction of a pixel, and how
// much the resampling smooths the noise depends on that fraction: the oracle
// is also scored shifted by it.
Point gauge_offset(const SyntheticSeries& s, const ScanModel& est) {
  const Point gauge = truth_gauge(s);
  Point mean;
  double count = 0.0;
  for (std::size_t k = 0; k < s.frame_count(); ++k)
    for (int l = 0; l < s.scan_timing().lines(); ++l) {
      const Point e = line_position_error(s, est, k, l, gauge);
      mean.x += e.x, mean.y += e.y, count += 1.0;
    }
  return {mean.x / count, mean.y / count};
}

// The per-line error e (frame-major, `lines` a frame) split per frame into
// a smooth part (a moving mean over 8 lines either side), the frame's mean
// and its linear trend over the lines (print_error_diagnostic).
struct LineErrorParts {
  std::vector<Point> smooth, rigid, trend;
};

LineErrorParts split_line_errors(const std::vector<Point>& e, std::size_t n, int lines) {
  const auto nl = static_cast<std::size_t>(lines);
  const int window = 8;
  LineErrorParts p{std::vector<Point>(e.size()), std::vector<Point>(e.size()), std::vector<Point>(e.size())};
  for (std::size_t k = 0; k < n; ++k) {
    Point m, slope;
    double sll = 0.0;
    const double lc = 0.5 * (lines - 1);
    for (int l = 0; l < lines; ++l) {
      const Point v = e[k * nl + static_cast<std::size_t>(l)];
      m.x += v.x / lines, m.y += v.y / lines;
      slope.x += (l - lc) * v.x, slope.y += (l - lc) * v.y, sll += (l - lc) * (l - lc);
    }
    slope.x /= sll, slope.y /= sll;
    for (int l = 0; l < lines; ++l) {
      Point a;
      int c = 0;
      for (int d = std::max(0, l - window); d <= std::min(lines - 1, l + window); ++d, ++c)
        a.x += e[k * nl + static_cast<std::size_t>(d)].x, a.y += e[k * nl + static_cast<std::size_t>(d)].y;
      const std::size_t i = k * nl + static_cast<std::size_t>(l);
      p.smooth[i] = {a.x / c, a.y / c};
      p.rigid[i] = m;
      p.trend[i] = {slope.x * (l - lc), slope.y * (l - lc)};
    }
  }
  return p;
}

// Where the corrected average loses against the oracle's: each line's
// position error E (the estimate's path and jitter against the truth's, 2-D,
// its mean over the series removed: a shift is the gauge) split per frame
// into a smooth part (a moving mean over `window` lines: what the path can
// hold) and the rest (row-wise: the jitter's), and the smooth part into each
// frame's mean (its rigid offset), its linear trend over the lines and what
// is left; the true model with only one part of the error added is averaged
// and scored like the others. The parts are not independent (the estimate's
// template saw them together), so they need not add up; the check is the
// full error rebuilt (close to the estimate's own residual).
void print_error_diagnostic(const SyntheticSeries& s, const FrameVector& frames, const ScanModel& est,
                            const std::vector<Point>& region, double r_oracle) {
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  const int lines = t.lines();
  const auto nl = static_cast<std::size_t>(lines);
  // E per line, 2-D, the gauge (its mean) removed.
  const Point mean = gauge_offset(s, est), gauge = truth_gauge(s);
  std::vector<Point> e(n * nl);
  for (std::size_t k = 0; k < n; ++k)
    for (int l = 0; l < lines; ++l) {
      const Point v = line_position_error(s, est, k, l, gauge);
      e[k * nl + static_cast<std::size_t>(l)] = {v.x - mean.x, v.y - mean.y};
    }
  const LineErrorParts parts = split_line_errors(e, n, lines);
  const std::vector<Point>&smooth = parts.smooth, &rigid = parts.rigid, &trend = parts.trend;
  // The true model plus a per-line error: the path through the truth plus
  // the error's component along the slow axis and its smooth part along the
  // fast axis, each line's fast-axis remainder in its jitter.
  auto score = [&](const std::function<Point(std::size_t)>& add) {
    std::vector<DriftSample> samples;
    const double t_end = t.frame_start(n);
    for (double u = 0; u <= t_end; u += 0.25 * t.line_time()) {
      const auto k = std::min<std::size_t>(n - 1, static_cast<std::size_t>(u / t.frame_time()));
      const double x = (u - t.line_mid_time(k, 0)) / t.line_time();
      const int l = std::clamp(static_cast<int>(std::lround(x)), 0, lines - 1);
      const Point a = add(k * nl + static_cast<std::size_t>(l)), d = true_drift(s, u, gauge);
      samples.push_back({u, d.x + a.x, d.y + a.y, 1});
    }
    DriftPathSettings ps;
    ps.knot_spacing = 0.5 * t.line_time();
    ps.smoothing = 1e-6;
    ScanModel m;
    m.path = DriftPath::fit(samples, 0.0, t_end, ps);
    m.jitter.assign(n, std::vector<double>(nl));
    for (std::size_t k = 0; k < n; ++k)
      for (int l = 0; l < lines; ++l) {
        // What the path holds at the line's middle, along the fast axis, against what the line needs.
        const std::size_t i = k * nl + static_cast<std::size_t>(l);
        const Point f = t.fast_axis(k), a = add(i);
        const double tm = t.line_mid_time(k, l);
        const Point held = m.path.at(tm), d = true_drift(s, tm, gauge);
        m.jitter[k][static_cast<std::size_t>(l)] =
            s.line_jitter(k, l) + (a.x - (held.x - d.x)) * f.x + (a.y - (held.y - d.y)) * f.y;
      }
    const SpecimenImage avg = average_in_specimen_coordinates(frames, t, m);
    const double r = residual_to_specimen(s, {avg.image, avg.origin}, region);
    return 100.0 * (r / r_oracle - 1.0);
  };
  auto part = [&](const std::vector<Point>& v) { return [&v](std::size_t i) { return v[i]; }; };
  std::vector<Point> rough(e.size()), smooth_rest(e.size()), no_rigid(e.size());
  for (std::size_t i = 0; i < e.size(); ++i) {
    rough[i] = {e[i].x - smooth[i].x, e[i].y - smooth[i].y};
    smooth_rest[i] = {smooth[i].x - rigid[i].x - trend[i].x, smooth[i].y - rigid[i].y - trend[i].y};
    no_rigid[i] = {e[i].x - rigid[i].x, e[i].y - rigid[i].y};
  }
  auto rms = [&](const std::vector<Point>& v) {
    double a = 0.0;
    for (const Point& p : v) a += p.x * p.x + p.y * p.y;
    return std::sqrt(a / static_cast<double>(v.size()));
  };
  std::printf(
      "%-52s  error parts (px RMS, the true model plus it: %% over the oracle): all %.4f %+.1f%%  smooth %.4f %+.1f%%"
      "  row-wise %.4f %+.1f%%  frame offsets %.4f %+.1f%%  frame trends %.4f %+.1f%%  smooth rest %.4f %+.1f%%"
      "  all but the frame offsets %.4f %+.1f%%\n",
      "", rms(e), score(part(e)), rms(smooth), score(part(smooth)), rms(rough), score(part(rough)), rms(rigid),
      score(part(rigid)), rms(trend), score(part(trend)), rms(smooth_rest), score(part(smooth_rest)), rms(no_rigid),
      score(part(no_rigid)));
  {
    // The gauge: the truth shifted as a whole, and the estimate's own shift kept.
    std::vector<Point> kept(e.size());
    for (std::size_t i = 0; i < e.size(); ++i) kept[i] = {e[i].x + mean.x, e[i].y + mean.y};
    std::printf("%-52s  mean error (%.4f, %.4f) px; all with it %+.1f%%; the truth shifted by", "", mean.x, mean.y,
                score(part(kept)));
    for (const Point c : {Point{0.25, 0}, Point{0.5, 0}, Point{0, 0.5}, Point{0.5, 0.5}, mean}) {
      std::vector<Point> shift(e.size(), c);
      std::printf("  (%.2f, %.2f) %+.1f%%", c.x, c.y, score(part(shift)));
    }
    std::printf("\n");
  }
  // By direction: the error only in the frames of one scan angle.
  std::vector<double> angles;
  for (std::size_t k = 0; k < n; ++k) {
    const Point f = t.fast_axis(k);
    const double a = std::atan2(f.y, f.x) * 180.0 / M_PI;
    if (std::none_of(angles.begin(), angles.end(), [a](double b) { return std::fabs(a - b) < 1e-6; }))
      angles.push_back(a);
  }
  if (angles.size() > 1)
    for (const double a : angles) {
      std::vector<Point> only(e.size());
      for (std::size_t k = 0; k < n; ++k) {
        const Point f = t.fast_axis(k);
        if (std::fabs(std::atan2(f.y, f.x) * 180.0 / M_PI - a) > 1e-6) continue;
        for (std::size_t l = 0; l < nl; ++l) only[k * nl + l] = e[k * nl + l];
      }
      std::printf("%-52s  the error only in frames at %.0f deg: %.4f px %+.1f%%\n", "", a, rms(only),
                  score(part(only)));
    }
}

// Where the path's edge goes wrong: in the first, a middle and the last
// frame, each band's last-round sample and the path at the band's time
// against the truth there (the truth's position averaged over the band's
// lines, path and jitter; the estimate's gauge offset taken off both), in
// px; and the path's error at the series' first instant, where the gauge
// d(0) = 0 was read before branch rotated-11.
void print_edge_diagnostic(const SyntheticSeries& s, const ScanDistortionResult& est, int band_lines) {
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  const Point gauge = truth_gauge(s), mean = gauge_offset(s, est.model);
  auto truth_over = [&](std::size_t k, int l0, int l1) {
    const Point f = t.fast_axis(k);
    Point m;
    for (int l = l0; l < l1; ++l) {
      const Point d = true_drift(s, t.line_mid_time(k, l), gauge);
      const double j = s.line_jitter(k, l);
      m.x += (d.x + j * f.x) / (l1 - l0), m.y += (d.y + j * f.y) / (l1 - l0);
    }
    return m;
  };
  const Point p0 = est.model.path.at(0.0), d0 = true_drift(s, 0.0, gauge);
  std::printf("%-52s  path error at t = 0: (%+.3f, %+.3f) px; band sample / path error (x, y) by band:\n", "",
              p0.x - d0.x - mean.x, p0.y - d0.y - mean.y);
  for (const std::size_t k : {std::size_t{0}, n / 2, n - 1}) {
    std::printf("%-52s    frame %zu:", "", k);
    for (const DriftSample& b : est.band_samples) {
      if (b.t < t.frame_start(k) || b.t >= t.frame_start(k + 1)) continue;
      const int line = static_cast<int>(std::lround((b.t - t.line_mid_time(k, 0)) / t.line_time()));
      const int l0 = std::clamp(line / band_lines * band_lines, 0, t.lines() - 1);
      const int l1 = std::min(t.lines(), l0 + band_lines);
      const Point tr = truth_over(k, l0, l1), p = est.model.path.at(b.t);
      std::printf("  %d: %+.2f %+.2f / %+.2f %+.2f", l0, b.dx - tr.x - mean.x, b.dy - tr.y - mean.y,
                  p.x - tr.x - mean.x, p.y - tr.y - mean.y);
    }
    std::printf("\n");
  }
}

// One case: synthesise, register rigidly, correct, average under the
// oracle, print the figures.
// The region the residuals are taken over: specimen points every frame
// covers under the true model, shrunk by 8 px so that no fit samples an edge.
std::vector<Point> covered_by_every_frame(const SpecimenImage& oracle_avg, std::size_t frames) {
  std::vector<Point> region;
  const int ow = oracle_avg.coverage.width, oh = oracle_avg.coverage.height;
  for (int j = 8; j < oh - 8; ++j)
    for (int i = 8; i < ow - 8; ++i) {
      bool all = true;
      for (int dj = -8; dj <= 8 && all; dj += 8)
        for (int di = -8; di <= 8 && all; di += 8)
          all = oracle_avg.coverage.at(i + di, j + dj) >= static_cast<float>(frames);
      if (all) region.push_back({oracle_avg.origin.x + i, oracle_avg.origin.y + j});
    }
  return region;
}

void run_case(const Case& c, const ScanDistortionSettings& settings, int threads, bool diagnose_template,
              bool diagnose_errors) {
  SyntheticSeries s(c.synth);
  const ScanTiming& timing = s.scan_timing();
  // Frames in memory: the series is rendered once, so no method pays for drawing it.
  std::vector<Frame> held;
  for (std::size_t k = 0; k < s.frame_count(); ++k) held.push_back(s.frame(k));
  const auto recorded = std::make_shared<FrameVector>(held);
  const FrameVector& frames_in_memory = *recorded;
  // The rigid registration sees the frames turned back into frame 0's orientation (as register does).
  const DerotatedSource turned_back(recorded, c.synth.scan_rotation_deg);
  const FrameSource& rigid_input = has_scan_rotation(c.synth.scan_rotation_deg)
                                       ? static_cast<const FrameSource&>(turned_back)
                                       : static_cast<const FrameSource&>(frames_in_memory);

  const fs::path dir = fs::temp_directory_path() / ("driftscan_bench_sd_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto progress = make_silent_progress();
  CancelToken cancel;
  auto t0 = Clock::now();
  std::clock_t c0 = std::clock();
  RegisterResult reg = register_series(rigid_input, RegistrationSettings{}, AveragingOptions{}, dir.string(), *progress,
                                       cancel, threads);
  const double rigid_wall = seconds_since(t0);
  const double rigid_cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  fs::remove_all(dir);
  std::vector<Point> rigid;
  for (const Registration& r : reg.registrations) rigid.push_back({r.transform.tx, r.transform.ty});

  t0 = Clock::now();
  c0 = std::clock();
  ScanDistortionSettings case_settings = settings;
  if (c.line_field_knots >= 0) case_settings.line_field_knots = c.line_field_knots;
  ScanDistortionResult est = estimate_scan_distortion(frames_in_memory, timing, rigid, case_settings);
  const double corrected_wall = seconds_since(t0);
  const double corrected_cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;

  const ScanModel oracle = oracle_model(s);
  const SpecimenImage oracle_avg = average_in_specimen_coordinates(frames_in_memory, timing, oracle);

  const std::vector<Point> region = covered_by_every_frame(oracle_avg, s.frame_count());
  if (region.size() < 1000) {
    std::printf("%-52s  skipped: the frames share only %zu px\n", c.name.c_str(), region.size());
    return;
  }
  const SpecimenImage rigid_specimen = rigid_average(s, held, rigid);
  const PlacedAverage rigid_avg{rigid_specimen.image, rigid_specimen.origin};
  const double r_rigid = residual_to_specimen(s, rigid_avg, region);
  const double r_corr = residual_to_specimen(s, {est.average.image, est.average.origin}, region);
  const double r_oracle = residual_to_specimen(s, {oracle_avg.image, oracle_avg.origin}, region);
  const Point gauge = gauge_offset(s, est.model);
  ScanModel oracle_in_gauge = oracle;
  oracle_in_gauge.path = oracle.path.shifted(gauge);
  const SpecimenImage oracle_gauge_avg = average_in_specimen_coordinates(frames_in_memory, timing, oracle_in_gauge);
  const double r_oracle_gauge = residual_to_specimen(s, {oracle_gauge_avg.image, oracle_gauge_avg.origin}, region);
  const Errors e = line_errors(s, est.model, rigid);
  const double floor = jitter_floor(s);
  const double learned_floor = jitter_floor(s, true);
  const double drift_learned_floor = jitter_floor_drift_learned(s);
  const double both_learned_floor = jitter_floor_drift_learned(s, true);
  // The floor one direction cannot go below (the average's own row offsets),
  // of the same frames scanned in one direction: the last figure of the
  // jitter's, for a series in several directions too (its frames' own row
  // offsets are seen by the other directions).
  SynthOptions one_direction = c.synth;
  one_direction.scan_rotation_deg.clear();
  const SyntheticSeries one_direction_series(one_direction);
  const double row_gauge = row_gauge_floor(one_direction_series);
  const double single_floor = std::hypot(floor, row_gauge);
  // The same with the drift learned: what a one-direction estimate of these
  // frames, which knows neither the average's row offsets nor the drift's
  // walk, cannot go below.
  const double single_drift_learned_floor = std::hypot(one_direction.scan_rotation_deg == c.synth.scan_rotation_deg
                                                           ? drift_learned_floor
                                                           : jitter_floor_drift_learned(one_direction_series),
                                                       row_gauge);
  // And with the specimen learned too: the floor of a one-direction estimate
  // that, like every estimate here, learns the specimen from the same frames.
  const double single_both_learned_floor = std::hypot(one_direction.scan_rotation_deg == c.synth.scan_rotation_deg
                                                          ? both_learned_floor
                                                          : jitter_floor_drift_learned(one_direction_series, true),
                                                      row_gauge);
  std::printf(
      "%-52s  residual oracle %.4f  corrected %.4f (%+.1f%%)  rigid %.4f (%+.1f%%)  oracle in the estimate's gauge "
      "%.4f: corrected %+.1f%% (gauge %+.3f, %+.3f px)\n",
      c.name.c_str(), r_oracle, r_corr, 100.0 * (r_corr / r_oracle - 1.0), r_rigid, 100.0 * (r_rigid / r_oracle - 1.0),
      r_oracle_gauge, 100.0 * (r_corr / r_oracle_gauge - 1.0), gauge.x, gauge.y);
  std::printf(
      "%-52s  per-line drift error %.4f px (rigid %.4f)  jitter error %.4f px (%.4f if 0, line fit precision %.4f,"
      " Cramer-Rao floor %.4f, with the average's row offsets %.4f, with the specimen learned %.4f,"
      " with the drift learned %.4f, with the specimen and the drift learned %.4f,"
      " one direction with the drift learned %.4f, with the specimen and the drift learned %.4f)"
      "  fast-axis line position error %.4f px (common to a row %.4f px)"
      "  rounds %zu converged %d not followed %zu"
      "  wall rigid %.2f s + correction %.2f s = %.2fx rigid  (cpu %.2f s + %.2f s = %.2fx)  region %zu px\n",
      "", e.line_drift, e.rigid_line_drift, e.jitter, e.jitter_zero, est.jitter_precision_px, floor, single_floor,
      learned_floor, drift_learned_floor, both_learned_floor, single_drift_learned_floor, single_both_learned_floor,
      e.position, e.position_common, est.rounds.size(), est.converged ? 1 : 0, est.not_followed.size(), rigid_wall,
      corrected_wall, (rigid_wall + corrected_wall) / rigid_wall, rigid_cpu, corrected_cpu,
      (rigid_cpu + corrected_cpu) / std::max(rigid_cpu, 1e-9), region.size());
  print_line_sigma_calibration(s, est);
  if (diagnose_template) {
    print_template_diagnostic(s, frames_in_memory, oracle, case_settings);
    print_jitter_diagnostic(s, frames_in_memory, est.model, oracle, case_settings);
    for (const double bin : {0.5, 1.0, 2.0}) {
      const Errors r = line_errors(s, row_corrected(s, est.model, bin), rigid);
      std::printf("%-52s  rows' mean taken off: jitter error %.4f px  fast-axis position %.4f (common %.4f)\n", "",
                  r.jitter, r.position, r.position_common);
    }
  }
  if (diagnose_errors) {
    print_error_diagnostic(s, frames_in_memory, est.model, region, r_oracle);
    print_edge_diagnostic(s, est, case_settings.band_lines);
    print_first_band_diagnostic(s, frames_in_memory, est.model, oracle, case_settings);
  }
  if (s.options().scan_hysteresis != 0.0) print_line_field_errors(s, est.model);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, size = 256;
  ScanDistortionSettings settings;
  std::size_t frames = 24;
  std::uint32_t seed = 11;  // the synthetic series' draw (noise, jitter, drift walk)
  std::vector<int> only;
  bool diagnose_template = false;
  bool diagnose_errors = false;
  bool twins = true;  // each several-direction case's one-direction twin too
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = static_cast<std::size_t>(std::atol(argv[++i]));
    else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) size = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) seed = static_cast<std::uint32_t>(std::atol(argv[++i]));
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) settings.max_rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--band-lines") && i + 1 < argc) settings.band_lines = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-jitter")) settings.estimate_jitter = false;
    else if (!std::strcmp(argv[i], "--no-template-filter")) settings.filter_template = false;
    else if (!std::strcmp(argv[i], "--template-filter-noise-scale") && i + 1 < argc)
      settings.template_filter_noise_scale = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--template-diagnostic")) diagnose_template = true;
    else if (!std::strcmp(argv[i], "--no-twins")) twins = false;
    else if (!std::strcmp(argv[i], "--error-diagnostic")) diagnose_errors = true;
    else if (!std::strcmp(argv[i], "--line-field") && i + 1 < argc) settings.line_field_knots = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--line-field-extent") && i + 1 < argc)
      settings.line_field_extent = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--line-field-prior") && i + 1 < argc)
      settings.line_field_prior = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--smoothing") && i + 1 < argc) settings.smoothing = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--binned-first-round") && i + 1 < argc)
      settings.binned_first_round_from = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--cases") && i + 1 < argc) {
      for (char* tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ","))
        only.push_back(std::atoi(tok));
    } else {
      std::fprintf(
          stderr,
          "usage: bench_scan_distortion [--threads N] [--cases 1,2] [--frames N] [--size N] [--seed N] [--rounds N] "
          "[--band-lines N] [--smoothing S (0: chosen from the data)] [--no-jitter] "
          "[--no-template-filter] [--template-diagnostic] [--error-diagnostic] [--no-twins] [--line-field KNOTS] "
          "[--line-field-extent FRACTION] [--line-field-prior PX] [--binned-first-round SAMPLES]\n");
      return 2;
    }
  }
  const OmpThreadCount guard(threads);
  const std::vector<Case> cases = make_cases(frames, size, seed);
  std::printf(
      "# %zu frames of %dx%d, %d threads; residual = RMS (counts) of the average minus the fitted clean specimen\n",
      frames, size, size, threads);
  // A case the engine refuses (e.g. registration failed: frames too small
  // for their turns to share enough content) is reported and the rest run.
  auto run_or_report = [&](const Case& c) {
    try {
      run_case(c, settings, threads, diagnose_template, diagnose_errors);
    } catch (const Error& e) {
      std::printf("%-52s  failed: %s\n", c.name.c_str(), e.what());
    }
  };
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    if (!only.empty() && std::find(only.begin(), only.end(), static_cast<int>(ci + 1)) == only.end()) continue;
    run_or_report(cases[ci]);
    if (!has_scan_rotation(cases[ci].synth.scan_rotation_deg) || !twins) continue;
    Case twin = cases[ci];  // the same frames (drift, jitter, noise) scanned in one direction
    twin.synth.scan_rotation_deg.clear();
    twin.name = "  ^ the same frames in one direction";
    run_or_report(twin);
  }
  const LineSigmaRange& r = line_sigma_range;
  if (r.path_axes > 0)
    std::printf(
        "# line sigma over the cases (target z-RMS 0.8-1.25): path %.3f-%.3f, %d of %d axes in range; jitter "
        "%.3f-%.3f, %d of %d cases in range\n",
        r.path_lo, r.path_hi, r.path_in, r.path_axes, r.jitter_cases ? r.jitter_lo : 0.0, r.jitter_hi, r.jitter_in,
        r.jitter_cases);
  return 0;
}
