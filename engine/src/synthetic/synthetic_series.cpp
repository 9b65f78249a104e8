#include "driftscan/synthetic/synthetic_series.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include "driftscan/core/cubic_bspline.hpp"
#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"

namespace driftscan {
namespace {

constexpr double kPi = 3.14159265358979323846;

// splitmix64 finaliser: a cheap, well-mixed hash, so every random quantity is
// a pure function of (seed, what, indices) and any frame can be drawn alone.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
std::uint64_t hash(std::uint64_t seed, std::uint64_t stream, std::uint64_t a, std::uint64_t b = 0) {
  return mix(mix(mix(mix(seed) ^ stream) ^ a) ^ b);
}
double unit(std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }  // [0, 1)

enum Stream : std::uint64_t { kWalk = 1, kOrigin, kSite, kJitter, kNoise, kWobble, kHysteresis };

// splitmix64 as a standard random bit generator: free to seed, so every row
// of every frame gets its own stream (deterministic whatever the threads).
struct SplitMix64 {
  using result_type = std::uint64_t;
  std::uint64_t state;
  explicit SplitMix64(std::uint64_t seed) : state(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type(0); }
  result_type operator()() {
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t x = state;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
};

// Poisson deviate of mean `mean`. Most pixels of a low-dose frame have means
// of a few counts, where inversion by sequential search (one uniform, about
// mean+1 steps) is several times faster than building libstdc++'s
// distribution parameters per pixel; larger means use the library.
double poisson_sample(double mean, SplitMix64& g, std::poisson_distribution<int>& library) {
  if (!(mean > 0.0)) return 0.0;
  if (mean >= 12.0) return library(g, std::poisson_distribution<int>::param_type(mean));
  double u = unit(g());
  double p = std::exp(-mean), cdf = p;
  int k = 0;
  while (u > cdf && k < 200) {
    ++k;
    p *= mean / k;
    cdf += p;
  }
  return k;
}

}  // namespace

// One lattice orientation: sites origin + i a1 + j a2; the inverse basis
// finds the index range of the sites under a frame's footprint.
struct LatticeGrain {
  double ox = 0, oy = 0;
  double a1x = 0, a1y = 0, a2x = 0, a2y = 0;
  double r1x = 0, r1y = 0, r2x = 0, r2y = 0;  // rows of the inverse basis
  std::uint64_t id = 0;

  void set(double ox_, double oy_, double b1x, double b1y, double b2x, double b2y) {
    ox = ox_, oy = oy_, a1x = b1x, a1y = b1y, a2x = b2x, a2y = b2y;
    double det = a1x * a2y - a2x * a1y;
    r1x = a2y / det, r1y = -a2x / det;
    r2x = -a1y / det, r2y = a1x / det;
  }
};

struct SyntheticSeries::Model {
  SynthOptions o;
  double sigma = 1.0, inv_two_sigma2 = 0.5, cutoff = 0.0;
  LatticeGrain grain[2];
  // Grain boundary: signed distance s = n . (q - b); grain 0 where s < -gap/2, grain 1 where s > gap/2.
  double bx = 0, by = 0, nx = 1, ny = 0, half_gap = 0;
  // A real-content specimen: B-spline coefficients of the normalised image
  // and where specimen point (0, 0) falls in it.
  Frame content;
  Point content_offset;

  double content_at(double x, double y) const {
    x = std::clamp(x + content_offset.x, 0.0, content.width - 1.0);
    y = std::clamp(y + content_offset.y, 0.0, content.height - 1.0);
    return sample_bspline(content, x, y);
  }

  // Frame k's hysteresis amplitude factor, uniform in [0.5, 1.5].
  double hysteresis_factor(std::uint64_t k) const { return 0.5 + unit(hash(o.seed, kHysteresis, k, 0)); }

  // The standard normal deviate of line `line` of frame k's jitter.
  double line_jitter_deviate(std::uint64_t k, int line) const {
    SplitMix64 g(hash(o.seed, kJitter, k, static_cast<std::uint64_t>(line)));
    return std::normal_distribution<double>(0.0, 1.0)(g);
  }

  double site_intensity(const LatticeGrain& g, long i, long j) const {
    std::uint64_t h = hash(o.seed, kSite + 16 * g.id, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j));
    if (unit(h) < o.vacancy_fraction) return 0.0;
    return 1.0 + o.intensity_spread * (2.0 * unit(mix(h)) - 1.0);
  }

  // Frame k = the model sampled at T_{0,k}(x + jitter(y), y). T is rigid
  // (distance-preserving), so a column at s appears as the same isotropic
  // Gaussian centred at T^{-1}(s) in frame k: each visible column is added
  // analytically to the pixels within the cutoff (no interpolation anywhere),
  // separably (one exp per row and per column) unless rows are jittered.
  Frame render(const Transform& t, std::uint64_t k, double jitter, double scale) const {
    const int w = o.width, h = o.height;
    if (content.width > 0) {  // no columns to splat: sample the image at every pixel's point
      std::vector<Point> points(static_cast<std::size_t>(w) * h);
      for (int y = 0; y < h; ++y) {
        const double jy = jitter > 0 ? jitter * line_jitter_deviate(k, y) : 0.0;
        for (int x = 0; x < w; ++x) points[static_cast<std::size_t>(y) * w + x] = t.apply(x + jy, y);
      }
      return render_probed(points, w, h, scale);
    }
    Frame f(w, h, static_cast<float>(scale * o.background));
    std::vector<double> jx(static_cast<std::size_t>(h), 0.0);
    double jmax = 0.0;
    if (jitter > 0) {
      for (int y = 0; y < h; ++y) {
        jx[static_cast<std::size_t>(y)] = jitter * line_jitter_deviate(k, y);
        jmax = std::max(jmax, std::fabs(jx[static_cast<std::size_t>(y)]));
      }
    }
    const Transform inv = t.inverse();
    const double margin = cutoff + jmax + 1.0;
    std::vector<double> gx, gy;

    auto splat = [&](double sx, double sy, double amplitude) {
      Point p = inv.apply(sx, sy);  // the column in frame-k pixels
      if (p.x < -margin || p.x > w - 1 + margin || p.y < -margin || p.y > h - 1 + margin) return;
      int y0 = std::max(0, static_cast<int>(std::ceil(p.y - cutoff)));
      int y1 = std::min(h - 1, static_cast<int>(std::floor(p.y + cutoff)));
      if (y0 > y1) return;
      gy.resize(static_cast<std::size_t>(y1) - static_cast<std::size_t>(y0) + 1);
      for (int y = y0; y <= y1; ++y) {
        double d = y - p.y;
        gy[static_cast<std::size_t>(y - y0)] = amplitude * std::exp(-d * d * inv_two_sigma2);
      }
      if (jitter <= 0) {
        int x0 = std::max(0, static_cast<int>(std::ceil(p.x - cutoff)));
        int x1 = std::min(w - 1, static_cast<int>(std::floor(p.x + cutoff)));
        if (x0 > x1) return;
        gx.resize(static_cast<std::size_t>(x1) - static_cast<std::size_t>(x0) + 1);
        for (int x = x0; x <= x1; ++x) {
          double d = x - p.x;
          gx[static_cast<std::size_t>(x - x0)] = std::exp(-d * d * inv_two_sigma2);
        }
        for (int y = y0; y <= y1; ++y) {
          float* row = f.row(y);
          double a = gy[static_cast<std::size_t>(y - y0)];
          for (int x = x0; x <= x1; ++x) row[x] += static_cast<float>(a * gx[static_cast<std::size_t>(x - x0)]);
        }
        return;
      }
      for (int y = y0; y <= y1; ++y) {  // row y samples x + jx[y]
        double cx = p.x - jx[static_cast<std::size_t>(y)];
        int x0 = std::max(0, static_cast<int>(std::ceil(cx - cutoff)));
        int x1 = std::min(w - 1, static_cast<int>(std::floor(cx + cutoff)));
        float* row = f.row(y);
        double a = gy[static_cast<std::size_t>(y - y0)];
        for (int x = x0; x <= x1; ++x) {
          double d = x - cx;
          row[x] += static_cast<float>(a * std::exp(-d * d * inv_two_sigma2));
        }
      }
    };

    // The frame's footprint in model coordinates, widened by the margin.
    Point corners[4] = {t.apply(-margin, -margin), t.apply(w - 1 + margin, -margin), t.apply(-margin, h - 1 + margin),
                        t.apply(w - 1 + margin, h - 1 + margin)};
    for_each_column(corners, scale, splat);
    return f;
  }

  // Calls add(sx, sy, amplitude) for every column (model coordinates) whose
  // lattice indices fall in the range spanned by the four corners (model
  // coordinates): the custom atoms, or the sites of each grain on its side of
  // the boundary.
  template <class Add>
  void for_each_column(const Point (&corners)[4], double scale, Add&& add) const {
    if (!o.atoms.empty()) {
      for (const Point& a : o.atoms) add(a.x, a.y, scale);
      return;
    }
    const int grains = o.grain_boundary ? 2 : 1;
    for (int gi = 0; gi < grains; ++gi) {
      const LatticeGrain& g = grain[gi];
      double umin = 1e300, umax = -1e300, vmin = 1e300, vmax = -1e300;
      for (const Point& c : corners) {
        double rx = c.x - g.ox, ry = c.y - g.oy;
        double u = g.r1x * rx + g.r1y * ry, v = g.r2x * rx + g.r2y * ry;
        umin = std::min(umin, u), umax = std::max(umax, u), vmin = std::min(vmin, v), vmax = std::max(vmax, v);
      }
      for (long i = static_cast<long>(std::floor(umin)); i <= static_cast<long>(std::ceil(umax)); ++i) {
        for (long j = static_cast<long>(std::floor(vmin)); j <= static_cast<long>(std::ceil(vmax)); ++j) {
          double sx = g.ox + i * g.a1x + j * g.a2x, sy = g.oy + i * g.a1y + j * g.a2y;
          if (o.grain_boundary) {
            double s = nx * (sx - bx) + ny * (sy - by);
            if (gi == 0 ? s >= -half_gap : s <= half_gap) continue;
          }
          double amplitude = site_intensity(g, i, j);
          if (amplitude > 0.0) add(sx, sy, scale * amplitude);
        }
      }
    }
  }

  // A scanned frame: pixel i shows the model at probed[i] (model
  // coordinates), each pixel at its own point, so no rigid shortcut applies.
  // The columns near the probed region are bucketed on a grid of cells one
  // cutoff wide; a pixel then sums the columns of its 3x3 cells within the
  // same square cutoff window the rigid renderer uses.
  Frame render_probed(const std::vector<Point>& probed, int w, int h, double scale) const {
    Frame f(w, h);
    if (content.width > 0) {
      const double base = scale * o.background;
#pragma omp parallel for schedule(static) if (static_cast <long>(w) * h >= 16384)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const Point q = probed[static_cast<std::size_t>(y) * w + x];
          f.at(x, y) = static_cast<float>(base + scale * content_at(q.x, q.y));
        }
      return f;
    }
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (const Point& q : probed) {
      xmin = std::min(xmin, q.x), xmax = std::max(xmax, q.x);
      ymin = std::min(ymin, q.y), ymax = std::max(ymax, q.y);
    }
    const double pad = cutoff + 1.0;
    xmin -= pad, ymin -= pad, xmax += pad, ymax += pad;
    struct Column {
      double x, y, amplitude;
    };
    std::vector<Column> columns;
    Point corners[4] = {{xmin, ymin}, {xmax, ymin}, {xmin, ymax}, {xmax, ymax}};
    for_each_column(corners, scale, [&](double sx, double sy, double a) {
      if (sx >= xmin && sx <= xmax && sy >= ymin && sy <= ymax) columns.push_back({sx, sy, a});
    });
    const double cell = std::max(cutoff, 0.5);
    const int nx = static_cast<int>((xmax - xmin) / cell) + 1, ny = static_cast<int>((ymax - ymin) / cell) + 1;
    auto cell_of = [&](double x, double y, int& cx, int& cy) {
      cx = std::clamp(static_cast<int>((x - xmin) / cell), 0, nx - 1);
      cy = std::clamp(static_cast<int>((y - ymin) / cell), 0, ny - 1);
    };
    // Counting sort of the columns by cell (stable: the sums below are in a
    // fixed order, so a frame is the same whatever the thread count).
    std::vector<std::size_t> start(static_cast<std::size_t>(nx) * ny + 1, 0);
    for (const Column& c : columns) {
      int cx, cy;
      cell_of(c.x, c.y, cx, cy);
      ++start[static_cast<std::size_t>(cy) * nx + cx + 1];
    }
    for (std::size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    std::vector<Column> sorted(columns.size());
    std::vector<std::size_t> next(start.begin(), start.end() - 1);
    for (const Column& c : columns) {
      int cx, cy;
      cell_of(c.x, c.y, cx, cy);
      sorted[next[static_cast<std::size_t>(cy) * nx + cx]++] = c;
    }
    const double base = scale * o.background;
    for (int y = 0; y < h; ++y) {
      float* row = f.row(y);
      for (int x = 0; x < w; ++x) {
        const Point q = probed[static_cast<std::size_t>(y) * w + x];
        int cx, cy;
        cell_of(q.x, q.y, cx, cy);
        double v = base;
        for (int j = std::max(0, cy - 1); j <= std::min(ny - 1, cy + 1); ++j)
          for (int i = std::max(0, cx - 1); i <= std::min(nx - 1, cx + 1); ++i) {
            const std::size_t id = static_cast<std::size_t>(j) * nx + i;
            for (std::size_t s = start[id]; s < start[id + 1]; ++s) {
              const double dx = q.x - sorted[s].x, dy = q.y - sorted[s].y;
              if (std::fabs(dx) > cutoff || std::fabs(dy) > cutoff) continue;
              v += sorted[s].amplitude * std::exp(-(dx * dx + dy * dy) * inv_two_sigma2);
            }
          }
        row[x] = static_cast<float>(v);
      }
    }
    return f;
  }
};

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw bad_input("synthetic series: " + what);
}

// Settings no series can be drawn with, each a one-line error naming it.
void check_options(const SynthOptions& o) {
  check(o.frames >= 1, "needs at least 1 frame");
  check(o.width >= 1 && o.height >= 1 && o.width <= 65536 && o.height <= 65536,
        "frame size " + std::to_string(o.width) + "x" + std::to_string(o.height) + " is out of range");
  check(std::isfinite(o.period) && o.period > 1.0, "the lattice period must be more than 1 pixel");
  check(std::isfinite(o.drift_step) && o.drift_step >= 0, "drift step must be >= 0");
  check(std::isfinite(o.drift_linear_x) && std::isfinite(o.drift_linear_y), "linear drift must be finite");
  check(std::isfinite(o.rotation_step_deg) && std::fabs(o.rotation_step_deg) <= 10,
        "rotation step must be within 10 degrees");
  check(std::isfinite(o.jitter) && o.jitter >= 0, "jitter must be >= 0");
  check(std::isfinite(o.dose) && o.dose < 1e9, "dose must be finite");
  check(std::isfinite(o.read_noise) && o.read_noise >= 0, "read noise must be >= 0");
  check(o.vacancy_fraction >= 0 && o.vacancy_fraction < 1, "vacancy fraction must be in [0, 1)");
  check(std::isfinite(o.atom_sigma) && o.atom_sigma >= 0, "atom sigma must be >= 0");
  check(std::isfinite(o.background) && o.background >= 0, "background must be >= 0");
  check(std::isfinite(o.intensity_spread) && o.intensity_spread >= 0 && o.intensity_spread < 1,
        "intensity spread must be in [0, 1)");
  check(std::isfinite(o.scan_dwell) && o.scan_dwell >= 0, "scan dwell must be >= 0 (0: frames drawn at one instant)");
  check(std::isfinite(o.scan_hysteresis) && (o.scan_hysteresis == 0.0 || o.scan_dwell > 0),
        "scan hysteresis needs raster timing (scan dwell > 0)");
  check(std::isfinite(o.scan_hysteresis_length) && o.scan_hysteresis_length > 0, "scan hysteresis length must be > 0");
  check_scan_rotations(o.scan_rotation_deg, o.frames, o.width, o.height, "synthetic series: ");
  if (o.scan_dwell > 0) {
    check(o.rotation_step_deg == 0.0, "rotation drift is not modelled with raster timing (scan dwell > 0)");
    check(std::isfinite(o.drift_wobble) && o.drift_wobble >= 0, "drift wobble must be >= 0");
    check(std::isfinite(o.drift_wobble_period) && o.drift_wobble_period > 0, "drift wobble period must be > 0");
  }
}

}  // namespace

SyntheticSeries::SyntheticSeries(const SynthOptions& options) : options_(options) {
  const SynthOptions& o = options_;
  check_options(o);
  if (o.scan_dwell > 0) {
    ScanTimingSettings timing;
    timing.dwell = o.scan_dwell;
    timing.line_flyback_fraction = o.scan_line_flyback;
    timing.frame_flyback_fraction = o.scan_frame_flyback;
    timing.direction = o.scan_direction;
    timing.rotation_deg = o.scan_rotation_deg;  // the frames' directions, for those who model the scan
    timing_ = std::make_shared<const ScanTiming>(timing, o.width, o.height);  // validates, naming the setting
  }

  // Truth: random walk + linear drift of the frame centre, rotation k * step.
  const std::size_t n = o.frames;
  truth_.resize(n);
  drift_.resize(n);
  angle_deg_.resize(n);
  std::mt19937_64 walk(hash(o.seed, kWalk, 0));
  std::normal_distribution<double> step(0.0, 1.0);
  Point c = centre();
  // Where each frame sits in model coordinates (the grain boundary is placed
  // among them): drift_ itself when frames are drawn at instants.
  std::vector<Point> placement;
  if (!timing_) {
    double dx = 0, dy = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (k > 0) {
        dx += o.drift_linear_x + o.drift_step * step(walk);
        dy += o.drift_linear_y + o.drift_step * step(walk);
      }
      drift_[k] = {dx, dy};
      angle_deg_[k] = o.rotation_step_deg * static_cast<double>(k);
      truth_[k] = k == 0 ? Transform::identity() : Transform::rigid(angle_deg_[k] * kPi / 180.0, dx, dy, c);
    }
    placement = drift_;
  } else {
    // The random walk of the drift path, one node per line time from the
    // start of frame 0 to past the end of the last frame; a step's std dev
    // makes the variance over one frame time drift_step^2 per axis.
    const ScanTiming& t = *timing_;
    const double nodes = std::ceil(static_cast<double>(n) * t.frame_time() / t.line_time()) + 2.0;
    check(nodes <= 1e8, "the series is too long for a drift path sampled every line time");
    const double sd = o.drift_step * std::sqrt(t.line_time() / t.frame_time());
    walk_.assign(static_cast<std::size_t>(nodes), Point{});
    for (std::size_t i = 1; i < walk_.size(); ++i) {
      walk_[i].x = walk_[i - 1].x + sd * step(walk);
      walk_[i].y = walk_[i - 1].y + sd * step(walk);
    }
    wobble_phase_x_ = 2 * kPi * unit(hash(o.seed, kWobble, 0));
    wobble_phase_y_ = 2 * kPi * unit(hash(o.seed, kWobble, 1));
    const Point mid0 = drift_at(t.frame_mid_time(0));
    placement.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      placement[k] = drift_at(t.frame_mid_time(k));
      drift_[k] = {placement[k].x - mid0.x, placement[k].y - mid0.y};
      angle_deg_[k] = 0.0;
      truth_[k] = k == 0 ? Transform::identity() : Transform::translation(drift_[k].x, drift_[k].y);
    }
  }

  auto m = std::make_shared<Model>();
  m->o = o;
  m->sigma = o.atom_sigma > 0 ? o.atom_sigma : 0.12 * o.period;
  m->inv_two_sigma2 = 1.0 / (2.0 * m->sigma * m->sigma);
  m->cutoff = 4.5 * m->sigma;  // exp(-4.5^2/2) ~ 4e-5 of a peak

  const double p = o.period;
  double b1x = p, b1y = 0, b2x, b2y;
  if (o.lattice == Lattice::hex) b2x = 0.5 * p, b2y = p * std::sqrt(3.0) / 2.0;
  else b2x = 0, b2y = p;
  double ox = p * unit(hash(o.seed, kOrigin, 0)), oy = p * unit(hash(o.seed, kOrigin, 1));
  m->grain[0].set(ox, oy, b1x, b1y, b2x, b2y);
  m->grain[0].id = 0;

  // The boundary passes through where the frame centres are on average, so
  // it stays in view as the drift accumulates; tilted 8 degrees off vertical.
  double mx = 0, my = 0;
  for (const Point& d : placement) mx += d.x, my += d.y;
  m->bx = c.x + mx / static_cast<double>(n);
  m->by = c.y + my / static_cast<double>(n);
  double tilt = 8.0 * kPi / 180.0;
  m->nx = std::cos(tilt), m->ny = -std::sin(tilt);
  m->half_gap = 0.15 * p;
  double th = o.grain_angle_deg * kPi / 180.0, cs = std::cos(th), sn = std::sin(th);
  auto rot = [&](double x, double y, double& rx, double& ry) { rx = cs * x - sn * y, ry = sn * x + cs * y; };
  double r1x, r1y, r2x, r2y, gx, gy;
  rot(b1x, b1y, r1x, r1y);
  rot(b2x, b2y, r2x, r2y);
  rot(ox - m->bx, oy - m->by, gx, gy);
  m->grain[1].set(m->bx + gx + 0.3 * p, m->by + gy + 0.2 * p, r1x, r1y, r2x, r2y);
  m->grain[1].id = 1;
  if (o.content) {
    const Frame& img = *o.content;
    check(img.width >= 4 && img.height >= 4, "the content image must be at least 4x4 pixels");
    std::vector<float> sorted(img.pixels.begin(), img.pixels.end());
    std::sort(sorted.begin(), sorted.end());
    const double lo = sorted[sorted.size() / 200], hi = sorted[sorted.size() - 1 - sorted.size() / 200];
    check(std::isfinite(lo) && std::isfinite(hi) && hi > lo, "the content image is constant or not finite");
    m->content = img;
    for (float& v : m->content.pixels) v = static_cast<float>(std::clamp((v - lo) / (hi - lo), 0.0, 1.0));
    bspline_prefilter(m->content);
    // The frames' mean placement at the image's centre.
    m->content_offset = {(img.width - 1) / 2.0 - (c.x + mx / static_cast<double>(n)),
                         (img.height - 1) / 2.0 - (c.y + my / static_cast<double>(n))};
  }
  model_ = std::move(m);
}

Frame SyntheticSeries::specimen(const std::vector<Point>& points, int width, int height) const {
  if (width < 1 || height < 1 || points.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height))
    throw std::logic_error("SyntheticSeries::specimen: points do not match width x height");
  return model_->render_probed(points, width, height, counts_scale());
}

std::size_t SyntheticSeries::frame_count() const { return options_.frames; }
int SyntheticSeries::width() const { return options_.width; }
int SyntheticSeries::height() const { return options_.height; }
const SynthOptions& SyntheticSeries::options() const { return options_; }
Point SyntheticSeries::centre() const { return {(options_.width - 1) / 2.0, (options_.height - 1) / 2.0}; }
double SyntheticSeries::counts_scale() const { return options_.dose > 0 ? options_.dose : 1.0; }

Transform SyntheticSeries::truth(std::size_t k) const { return truth_.at(k); }

const ScanTiming& SyntheticSeries::scan_timing() const {
  if (!timing_) throw std::logic_error("synthetic series: no raster timing (scan dwell is 0)");
  return *timing_;
}

Point SyntheticSeries::drift_at(double t) const {
  const ScanTiming& timing = scan_timing();
  const SynthOptions& o = options_;
  const double frames = t / timing.frame_time();  // time in frame times
  const double phase = 2 * kPi * frames / o.drift_wobble_period;
  Point d{o.drift_linear_x * frames + o.drift_wobble * (std::sin(phase + wobble_phase_x_) - std::sin(wobble_phase_x_)),
          o.drift_linear_y * frames + o.drift_wobble * (std::sin(phase + wobble_phase_y_) - std::sin(wobble_phase_y_))};
  // The walk between its nodes (linear), held at its ends outside them.
  const double u = std::clamp(t / timing.line_time(), 0.0, static_cast<double>(walk_.size() - 1));
  const std::size_t i = std::min(static_cast<std::size_t>(u), walk_.size() - 2);
  const double f = u - static_cast<double>(i);
  d.x += (1 - f) * walk_[i].x + f * walk_[i + 1].x;
  d.y += (1 - f) * walk_[i].y + f * walk_[i + 1].y;
  return d;
}

double SyntheticSeries::line_jitter(std::size_t k, int line) const {
  scan_timing();  // raster timing only, like the rest of the per-line truth
  return options_.jitter > 0 ? options_.jitter * model_->line_jitter_deviate(k, line) : 0.0;
}

double SyntheticSeries::line_field(std::size_t k, double s) const {
  scan_timing();
  const SynthOptions& o = options_;
  if (!(o.scan_hysteresis != 0.0)) return 0.0;
  return o.scan_hysteresis * model_->hysteresis_factor(k) * std::exp(-s / o.scan_hysteresis_length);
}

Point SyntheticSeries::probed(std::size_t k, double x, double y) const {
  const ScanTiming& timing = scan_timing();
  const Point d = drift_at(timing.time_of(k, x, y));
  const double j = line_jitter(k, timing.line_of(static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y)))) +
                   line_field(k, timing.sample_of(x, y));
  const Point fast = timing.fast_axis();
  const Point p = scan_rotation_transform(scan_rotation_deg(k), options_.width, options_.height)
                      .apply(x + j * fast.x, y + j * fast.y);
  return {p.x + d.x, p.y + d.y};
}
double SyntheticSeries::scan_rotation_deg(std::size_t k) const {
  return scan_rotation_of(options_.scan_rotation_deg, k);
}
Point SyntheticSeries::drift(std::size_t k) const { return drift_.at(k); }
double SyntheticSeries::angle_deg(std::size_t k) const { return angle_deg_.at(k); }

std::string SyntheticSeries::describe() const {
  const SynthOptions& o = options_;
  std::ostringstream s;
  s << "synthetic: " << o.frames << " x " << o.width << "x" << o.height << " float32, "
    << (o.atoms.empty() ? to_string(o.lattice) : "custom") << " lattice period " << o.period << " px, dose " << o.dose
    << ", seed " << o.seed;
  if (timing_) s << ", " << timing_->describe();
  return s.str();
}

Frame SyntheticSeries::clean_frame(std::size_t k) const {
  const int w = options_.width, h = options_.height;
  // A recorded pixel shows the point its scan rotation turns it to, then drifted.
  const Transform turn = scan_rotation_transform(scan_rotation_deg(k), w, h);
  if (!timing_) return model_->render(compose(truth(k), turn), k, options_.jitter, counts_scale());
  // Scanned: every pixel at the point probed at its own acquisition time.
  const ScanTiming& timing = *timing_;
  const Point fast = timing.fast_axis();
  std::vector<double> jitter(static_cast<std::size_t>(timing.lines()));
  for (int line = 0; line < timing.lines(); ++line) jitter[static_cast<std::size_t>(line)] = line_jitter(k, line);
  std::vector<Point> probed(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const Point d = drift_at(timing.time_of(k, x, y));
      const double j = jitter[static_cast<std::size_t>(timing.line_of(x, y))] + line_field(k, timing.sample_of(x, y));
      const Point p = turn.apply(x + j * fast.x, y + j * fast.y);
      probed[static_cast<std::size_t>(y) * w + x] = {p.x + d.x, p.y + d.y};
    }
  return model_->render_probed(probed, w, h, counts_scale());
}

Frame SyntheticSeries::ideal_frame(std::size_t k) const {
  if (!timing_) return model_->render(truth(k), k, 0.0, counts_scale());
  // An instant scan at the frame's mid time (truth(k) is relative to frame 0's).
  const Point d = drift_at(timing_->frame_mid_time(k));
  return model_->render(Transform::translation(d.x, d.y), k, 0.0, counts_scale());
}

Frame SyntheticSeries::frame(std::size_t k) const {
  Frame f = clean_frame(k);
  const SynthOptions& o = options_;
  if (o.dose <= 0 && o.read_noise <= 0) return f;
  const int w = f.width, h = f.height;
#pragma omp parallel for schedule(static) if (static_cast <long>(w) * h >= 16384)
  for (int y = 0; y < h; ++y) {
    // One generator per row: the noise is the same whatever the thread count.
    SplitMix64 g(hash(o.seed, kNoise, k, static_cast<std::uint64_t>(y)));
    std::poisson_distribution<int> poisson;
    std::normal_distribution<double> normal(0.0, 1.0);
    float* row = f.row(y);
    for (int x = 0; x < w; ++x) {
      double v = row[x];
      if (o.dose > 0) v = poisson_sample(v, g, poisson);
      if (o.read_noise > 0) v += o.read_noise * normal(g);
      row[x] = static_cast<float>(v);
    }
  }
  return f;
}

}  // namespace driftscan
