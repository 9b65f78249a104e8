#include "driftscan/scan_distortion.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "driftscan/cubic_bspline.hpp"
#include "driftscan/error.hpp"

namespace driftscan {
namespace {

// The cubic B-spline of `coeffs` at (x, y) and its gradient; false when the
// 4x4 taps leave the image (no clamped edge values in a fit).
bool sample_with_gradient(const Frame& coeffs, double x, double y, double& v, double& gx, double& gy) {
  const int ix = static_cast<int>(std::floor(x)), iy = static_cast<int>(std::floor(y));
  if (ix < 1 || iy < 1 || ix + 2 >= coeffs.width || iy + 2 >= coeffs.height) return false;
  double wx[4], wy[4], dx[4], dy[4];
  bspline_weights(x - ix, wx);
  bspline_weights(y - iy, wy);
  bspline_weight_derivatives(x - ix, dx);
  bspline_weight_derivatives(y - iy, dy);
  v = gx = gy = 0.0;
  for (int j = 0; j < 4; ++j) {
    const float* p = coeffs.row(iy - 1 + j) + ix - 1;
    double r = 0, rd = 0;
    for (int i = 0; i < 4; ++i) r += wx[i] * p[i], rd += dx[i] * p[i];
    v += wy[j] * r;
    gx += wy[j] * rd;
    gy += dy[j] * r;
  }
  return true;
}

// The average as a registration template: spline coefficients, and which
// specimen points are covered well enough to compare against.
struct Template {
  Frame coeffs;
  const SpecimenImage* image = nullptr;
  double min_coverage = 1.0;

  // Value and gradient at specimen point q; false where the average is thin.
  bool at(Point q, double& v, double& gx, double& gy) const {
    const double x = q.x - image->origin.x, y = q.y - image->origin.y;
    const int nx = static_cast<int>(std::lround(x)), ny = static_cast<int>(std::lround(y));
    if (nx < 0 || ny < 0 || nx >= image->coverage.width || ny >= image->coverage.height) return false;
    if (image->coverage.at(nx, ny) < min_coverage) return false;
    return sample_with_gradient(coeffs, x, y, v, gx, gy);
  }
};

// One band's registration against the template: the shift delta that makes
// band(p) ~ T(probed(p) + delta) + c, by Gauss-Newton from delta = 0.
struct BandFit {
  Point delta;
  double weight = 0.0;  // inverse variance of delta along its worst direction
  double residual_var = 0.0;
  double t = 0.0;   // mean acquisition time of the pixels used
  Point mean_path;  // mean of d(t) over the pixels used
  bool ok = false;
};

BandFit fit_band(const Frame& frame, const std::vector<std::pair<int, int>>& pixels, std::size_t k,
                 const ScanTiming& timing, const ScanModel& model, const Template& tpl, double max_offset) {
  BandFit fit;
  std::vector<Point> q(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) q[i] = model.probed(timing, k, pixels[i].first, pixels[i].second);
  double c = 0.0;
  for (int iteration = 0; iteration < 8; ++iteration) {
    // Normal equations in (delta_x, delta_y, c).
    double a[3][3] = {}, b[3] = {}, rr = 0.0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      double v, gx, gy;
      if (!tpl.at({q[i].x + fit.delta.x, q[i].y + fit.delta.y}, v, gx, gy)) continue;
      const double r = frame.at(pixels[i].first, pixels[i].second) - v - c;
      const double g[3] = {gx, gy, 1.0};
      for (int m = 0; m < 3; ++m) {
        for (int l = 0; l < 3; ++l) a[m][l] += g[m] * g[l];
        b[m] += g[m] * r;
      }
      rr += r * r;
      ++n;
    }
    if (n < 32) return fit;
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
    // Confidence: the smaller eigenvalue of the information matrix, over the
    // residual variance (a featureless or noisy band weighs little).
    const double tr = s00 + s11, disc = std::sqrt(std::max(0.0, 0.25 * tr * tr - det));
    fit.weight = (0.5 * tr - disc) / std::max(fit.residual_var, 1e-12);
    if (std::hypot(ddx, ddy) < 1e-4) break;
  }
  // A band stuck on the bound did not find its match: it gives no sample.
  if (std::fabs(fit.delta.x) >= max_offset || std::fabs(fit.delta.y) >= max_offset) return fit;
  // The sample is the whole displacement the band saw: the path, the
  // (slow part of the) lines' jitter and the correction.
  double t = 0, px = 0, py = 0;
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const double tp = timing.time_of(k, pixels[i].first, pixels[i].second);
    t += tp, px += q[i].x - pixels[i].first, py += q[i].y - pixels[i].second;
  }
  const double n = static_cast<double>(pixels.size());
  fit.t = t / n;
  fit.mean_path = {px / n, py / n};
  fit.ok = fit.weight > 0.0;
  return fit;
}

// The line's jitter by 1-D matching against the template along the fast
// axis, with a Gaussian prior of std dev `prior` (noise variance `noise`):
// minimises sum (r - g * dj)^2 + noise / prior^2 * j^2 over j (means of r and
// g removed, so an intensity offset does not pull).
double fit_line_jitter(const Frame& frame, const std::vector<std::pair<int, int>>& pixels, std::size_t k, int line,
                       const ScanTiming& timing, ScanModel& model, const Template& tpl, double noise, double prior,
                       double max_jitter) {
  const Point fast = timing.fast_axis();
  double& j = model.jitter[k][static_cast<std::size_t>(line)];
  const double lambda = noise / (prior * prior);
  for (int iteration = 0; iteration < 4; ++iteration) {
    double sg = 0, sr = 0, sgg = 0, sgr = 0;
    std::size_t n = 0;
    for (const auto& pixel : pixels) {
      const Point q = model.probed(timing, k, pixel.first, pixel.second);
      double v, gx, gy;
      if (!tpl.at(q, v, gx, gy)) continue;
      const double g = gx * fast.x + gy * fast.y, r = frame.at(pixel.first, pixel.second) - v;
      sg += g, sr += r, sgg += g * g, sgr += g * r, ++n;
    }
    if (n < 8) return j;
    const double mg = sg / n, mr = sr / n;
    const double cgg = sgg - n * mg * mg, cgr = sgr - n * mg * mr;
    const double step = (cgr - lambda * j) / (cgg + lambda);
    j = std::clamp(j + step, -max_jitter, max_jitter);
    if (std::fabs(step) < 1e-4) break;
  }
  return j;
}

// v minus its moving average over `window` lines (centred, shrunk at the ends).
std::vector<double> high_pass(const std::vector<double>& v, int window) {
  const long n = static_cast<long>(v.size()), half = window / 2;
  std::vector<double> prefix(v.size() + 1, 0.0), out(v.size());
  for (long i = 0; i < n; ++i)
    prefix[static_cast<std::size_t>(i + 1)] = prefix[static_cast<std::size_t>(i)] + v[static_cast<std::size_t>(i)];
  for (long i = 0; i < n; ++i) {
    const long a = std::max(0L, i - half), b = std::min(n, i + half + 1);
    out[static_cast<std::size_t>(i)] =
        v[static_cast<std::size_t>(i)] -
        (prefix[static_cast<std::size_t>(b)] - prefix[static_cast<std::size_t>(a)]) / static_cast<double>(b - a);
  }
  return out;
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
  if (frame < jitter.size()) {
    const int line = timing.line_of(static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y)));
    j = jitter[frame][static_cast<std::size_t>(line)];
  }
  const Point fast = timing.fast_axis();
  return {x + d.x + j * fast.x, y + d.y + j * fast.y};
}

Point ScanModel::pixel_showing(const ScanTiming& timing, std::size_t frame, Point q) const {
  const Point d0 = path.at(timing.frame_mid_time(frame));
  Point p{q.x - d0.x, q.y - d0.y};
  for (int step = 0; step < 4; ++step) {
    const Point r = probed(timing, frame, p.x, p.y);
    p.x += q.x - r.x;
    p.y += q.y - r.y;
  }
  return p;
}

SpecimenImage average_in_specimen_coordinates(const FrameSource& frames, const ScanTiming& timing,
                                              const ScanModel& model) {
  const int w = timing.width(), h = timing.height();
  const std::size_t n = frames.frame_count();
  // The union of the frames' footprints: probed points along every border.
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (std::size_t k = 0; k < n; ++k) {
    auto extend = [&](int x, int y) {
      const Point q = model.probed(timing, k, x, y);
      xmin = std::min(xmin, q.x), xmax = std::max(xmax, q.x), ymin = std::min(ymin, q.y), ymax = std::max(ymax, q.y);
    };
    for (int x = 0; x < w; ++x) extend(x, 0), extend(x, h - 1);
    for (int y = 0; y < h; ++y) extend(0, y), extend(w - 1, y);
  }
  SpecimenImage out;
  out.origin = {std::floor(xmin), std::floor(ymin)};
  const int ow = static_cast<int>(std::ceil(xmax) - out.origin.x) + 1;
  const int oh = static_cast<int>(std::ceil(ymax) - out.origin.y) + 1;
  if (ow > 8 * w + 64 || oh > 8 * h + 64)
    throw bad_input("scan distortion: the drift spans " + std::to_string(ow) + "x" + std::to_string(oh) +
                    " px, far beyond the frames; the rigid drift is not a usable start");
  Frame sum(ow, oh, 0.0f);
  out.coverage = Frame(ow, oh, 0.0f);
  for (std::size_t k = 0; k < n; ++k) {
    Frame coeffs = frames.frame(k);
    bspline_prefilter(coeffs);
#pragma omp parallel for schedule(static)
    for (int j = 0; j < oh; ++j) {
      for (int i = 0; i < ow; ++i) {
        const Point p = model.pixel_showing(timing, k, {out.origin.x + i, out.origin.y + j});
        if (p.x < 0.0 || p.y < 0.0 || p.x > w - 1 || p.y > h - 1) continue;
        sum.at(i, j) += sample_bspline(coeffs, p.x, p.y);
        out.coverage.at(i, j) += 1.0f;
      }
    }
  }
  // Uncovered pixels take the mean, so the image has no artificial edges.
  double total = 0, count = 0;
  for (std::size_t i = 0; i < sum.size(); ++i)
    if (out.coverage.pixels[i] > 0) total += sum.pixels[i] / out.coverage.pixels[i], count += 1;
  const float mean = count > 0 ? static_cast<float>(total / count) : 0.0f;
  out.image = Frame(ow, oh, mean);
  for (std::size_t i = 0; i < sum.size(); ++i)
    if (out.coverage.pixels[i] > 0) out.image.pixels[i] = sum.pixels[i] / out.coverage.pixels[i];
  return out;
}

ScanDistortionResult estimate_scan_distortion(const FrameSource& frames, const ScanTiming& timing,
                                              const std::vector<Point>& rigid_drift,
                                              const ScanDistortionSettings& settings) {
  const std::size_t n = frames.frame_count();
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw bad_input("scan distortion: " + what);
  };
  require(n >= 1, "the series has no frames");
  require(frames.width() == timing.width() && frames.height() == timing.height(),
          "the scan timing is for " + std::to_string(timing.width()) + "x" + std::to_string(timing.height()) +
              " frames, the series has " + std::to_string(frames.width()) + "x" + std::to_string(frames.height()));
  require(rigid_drift.size() == n, "needs one rigid drift per frame (got " + std::to_string(rigid_drift.size()) +
                                       " for " + std::to_string(n) + " frames)");
  require(settings.band_lines >= 4 && settings.band_lines <= timing.lines(),
          "band lines must be between 4 and the " + std::to_string(timing.lines()) + " lines of a frame (got " +
              std::to_string(settings.band_lines) + ")");
  require(std::isfinite(settings.max_band_offset) && settings.max_band_offset > 0, "max band offset must be > 0");
  require(settings.max_rounds >= 1, "max rounds must be >= 1");
  require(std::isfinite(settings.jitter_prior) && settings.jitter_prior > 0, "jitter prior must be > 0");

  const double t_end = timing.frame_start(n);
  ScanDistortionResult result;
  ScanModel& model = result.model;
  model.jitter.assign(n, std::vector<double>(static_cast<std::size_t>(timing.lines()), 0.0));
  // The start: a smooth path through the rigid shifts at the frames' mid
  // times. Its velocity already shears every frame the right way (the drift
  // between frames is the drift within them), which is most of the distortion.
  if (n >= 2) {
    std::vector<DriftSample> rigid;
    for (std::size_t k = 0; k < n; ++k)
      rigid.push_back({timing.frame_mid_time(k), rigid_drift[k].x, rigid_drift[k].y, 1.0});
    // Rigid shifts are accurate (hundredths of a pixel): nearly interpolate
    // them rather than smooth them away.
    DriftPathSettings ps;
    ps.knot_spacing = choose_knot_spacing(timing.frame_time(), 1.0);
    ps.smoothing = 1e-3;
    model.path = DriftPath::fit(std::move(rigid), 0.0, t_end, ps);
  } else {
    model.path = DriftPath().shifted(rigid_drift[0]);
  }
  // Gauge: specimen coordinates are those of the start of frame 0.
  auto to_gauge = [&](const DriftPath& p) {
    const Point d0 = p.at(0.0);
    return p.shifted({-d0.x, -d0.y});
  };
  model.path = to_gauge(model.path);

  std::vector<Frame> loaded(n);
  for (std::size_t k = 0; k < n; ++k) loaded[k] = frames.frame(k);
  const auto lines = pixels_by_line(timing);
  // Bands: consecutive lines; the remainder joins the last band.
  std::vector<std::vector<std::pair<int, int>>> bands;
  for (int l0 = 0; l0 < timing.lines(); l0 += settings.band_lines) {
    int l1 = std::min(timing.lines(), l0 + settings.band_lines);
    if (timing.lines() - l1 < settings.band_lines / 2) l1 = timing.lines();
    std::vector<std::pair<int, int>> band;
    for (int l = l0; l < l1; ++l)
      band.insert(band.end(), lines[static_cast<std::size_t>(l)].begin(), lines[static_cast<std::size_t>(l)].end());
    bands.push_back(std::move(band));
    if (l1 == timing.lines()) break;
  }
  DriftPathSettings ps;
  ps.knot_spacing = choose_knot_spacing(timing.frame_time(), static_cast<double>(bands.size()));
  ps.smoothing = settings.smoothing;

  for (int round = 0; round < settings.max_rounds; ++round) {
    const auto started = std::chrono::steady_clock::now();
    SpecimenImage average = average_in_specimen_coordinates(frames, timing, model);
    Template tpl;
    tpl.coeffs = average.image;
    bspline_prefilter(tpl.coeffs);
    tpl.image = &average;
    tpl.min_coverage = std::max(1.0, 0.25 * static_cast<double>(n));

    // Bands of every frame against the average.
    std::vector<BandFit> fits(n * bands.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (long i = 0; i < static_cast<long>(fits.size()); ++i) {
      const std::size_t k = static_cast<std::size_t>(i) / bands.size(), b = static_cast<std::size_t>(i) % bands.size();
      fits[static_cast<std::size_t>(i)] =
          fit_band(loaded[k], bands[b], k, timing, model, tpl, settings.max_band_offset);
    }
    std::vector<DriftSample> samples;
    double noise = 0.0, noise_count = 0.0;
    for (const BandFit& f : fits)
      if (f.ok) {
        samples.push_back({f.t, f.mean_path.x + f.delta.x, f.mean_path.y + f.delta.y, f.weight});
        noise += f.residual_var, noise_count += 1;
      }
    require(samples.size() >= 2, "no band of any frame could be registered against the average");
    noise /= noise_count;
    const DriftPath previous = model.path;
    model.path = to_gauge(DriftPath::fit(samples, 0.0, t_end, ps));

    // Lines' jitter against the same average, under the new path. Only its
    // fast part is jitter: anything smooth over a band's worth of lines is
    // drift, which the path must carry (left in the jitter, it would be a
    // second, unregularised copy of the path that the bands then miss).
    if (settings.estimate_jitter) {
#pragma omp parallel for schedule(dynamic, 1)
      for (long k = 0; k < static_cast<long>(n); ++k) {
        const std::size_t fk = static_cast<std::size_t>(k);
        for (int l = 0; l < timing.lines(); ++l)
          fit_line_jitter(loaded[fk], lines[static_cast<std::size_t>(l)], fk, l, timing, model, tpl, noise,
                          settings.jitter_prior, settings.max_jitter);
        model.jitter[fk] = high_pass(model.jitter[fk], settings.band_lines);
      }
    }

    double change = 0.0;
    for (std::size_t k = 0; k < n; ++k)
      for (int l = 0; l < timing.lines(); ++l) {
        const double t = timing.line_mid_time(k, l);
        const Point a = model.path.at(t), b = previous.at(t);
        change = std::max(change, std::hypot(a.x - b.x, a.y - b.y));
      }
    ScanDistortionRound r;
    r.path_change = change;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result.rounds.push_back(r);
    result.band_samples = std::move(samples);
    if (round >= 1 && change < settings.tolerance) {
      result.converged = true;
      break;
    }
  }
  result.average = average_in_specimen_coordinates(frames, timing, model);
  return result;
}

}  // namespace driftscan
