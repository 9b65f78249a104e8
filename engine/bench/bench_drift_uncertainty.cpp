// Calibration of the per-frame drift uncertainty (drift_uncertainty.hpp) on
// synthetic series with known truth. Per case (dose, size, lattice, model):
// the RMS of the normalised errors (error / sigma) per axis (target 0.8-1.25),
// the fraction of frames whose 95% interval (1.96 sigma) holds the truth
// (target 92-98%), and sigma of a deliberately poor frame (blurred, or mostly
// blank) over the series' median (target >= 3). Several seeds per case: frame
// 0's noise is common to all frames of a series, so one series is one draw of
// it, and 30 seeds are needed for the z-RMS itself to be known to about
// +-0.05 (each line prints its bootstrap interval). Frames off by more than
// 1 px (a lattice-period jump of the chain) are counted apart (`jumps`, the
// case then misses) and left out of z.
// The error splits into the part common to all frames (frame 0's noise: one
// draw per series) and each frame's own part. Per series the common part is
// estimated by the mean error over its frames and judged against the
// series' common sigma (report.json's uncertainty.common): `common z` is the
// RMS over the seeds (target: a unit normal's, 1 within its interval); each
// frame's own part, its error minus that mean, against sqrt(sigma^2 -
// common^2), with the mean's own share taken out of the expected variance
// (`own z-RMS`, target 0.85-1.2 per axis). `below` counts frames whose sigma
// is under the series' common sigma (target 0). A closing line pools the
// common part's draws of every case: the target is over the cases, and one
// case's 30 draws miss their 90% range by chance in one case of five; and
// one the own parts and the whole errors of every frame of every case (a
// bias shared by the cases is the whole sigma's when it shows in both).
// Usage: bench_drift_uncertainty [--quick] [--seeds N=30] [--frames N=16]
//   --quick: at most 10 seeds, no 512/1024 cases (intervals about twice as wide)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"
#include "driftscan/registration/refinement.hpp"
#include "driftscan/registration/registration_operator.hpp"
#include "driftscan/registration/sequential_scan.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

// The series with frame `poor` blurred (Gaussian, `blur` px) or, with
// blur < 0, blank but for a corner (a quarter of its width and height).
class PoorFrame : public FrameSource {
 public:
  PoorFrame(const SyntheticSeries& s, std::size_t poor, double blur) : s_(s), poor_(poor), blur_(blur) {}
  std::size_t frame_count() const override { return s_.frame_count(); }
  int width() const override { return s_.width(); }
  int height() const override { return s_.height(); }
  std::string describe() const override { return s_.describe(); }
  Frame frame(std::size_t k) const override {
    Frame f = s_.frame(k);
    if (k != poor_) return f;
    if (blur_ > 0) return gaussian_smooth(f, blur_);
    for (int y = 0; y < f.height; ++y)
      for (int x = 0; x < f.width; ++x)
        if (x >= f.width / 4 || y >= f.height / 4) f.at(x, y) = 0.0f;
    return f;
  }

 private:
  const SyntheticSeries& s_;
  std::size_t poor_;
  double blur_;
};

struct Case {
  std::string name;
  SynthOptions synth;
  MotionModel model = MotionModel::translation;
  double poor_blur = 3.0;  // < 0: mostly blank
};

// Per seed: frame 0's noise is shared by a series' frames, so the seeds,
// not the frames, are the independent draws the bootstrap resamples.
struct SeedSums {
  double zx2 = 0, zy2 = 0;
  std::size_t inside = 0, count = 0;  // over both axes
  double ox2 = 0, oy2 = 0;            // own parts' z^2, summed
  std::size_t own_count = 0;
  double cx = 0, cy = 0;  // common part's z (one draw)
};

struct Stats {
  std::vector<SeedSums> seeds;
  std::size_t jumps = 0, below = 0;
  std::vector<double> ratios;
  double seconds = 0, uncertainty_seconds = 0, median_sigma = 0;
};

// One series' errors split into the common part (their mean) and each
// frame's own (error - mean). With own variances o_k^2 = sigma_k^2 - c^2 and
// S = sum o_j^2 over the N frames: var(mean) = c^2 + S/N^2, var(e_k - mean)
// = o_k^2 (1 - 2/N) + S/N^2.
template <class Row>
void split_common(const std::vector<Row>& rows, const UncertaintySummary& common, SeedSums& sums, std::size_t& below) {
  const double n = static_cast<double>(rows.size());
  if (rows.size() < 2) return;
  const double c2x = common.common_sigma_dx * common.common_sigma_dx;
  const double c2y = common.common_sigma_dy * common.common_sigma_dy;
  double mx = 0, my = 0, Sx = 0, Sy = 0;
  for (const Row& r : rows) {
    mx += r.ex / n;
    my += r.ey / n;
    Sx += std::max(0.0, r.sx * r.sx - c2x);
    Sy += std::max(0.0, r.sy * r.sy - c2y);
    if (r.sx * r.sx < c2x || r.sy * r.sy < c2y) ++below;
  }
  sums.cx = mx / std::sqrt(c2x + Sx / (n * n));
  sums.cy = my / std::sqrt(c2y + Sy / (n * n));
  for (const Row& r : rows) {
    const double vx = std::max(0.0, r.sx * r.sx - c2x) * (1 - 2 / n) + Sx / (n * n);
    const double vy = std::max(0.0, r.sy * r.sy - c2y) * (1 - 2 / n) + Sy / (n * n);
    sums.ox2 += (r.ex - mx) * (r.ex - mx) / vx;
    sums.oy2 += (r.ey - my) * (r.ey - my) / vy;
    ++sums.own_count;
  }
}

void run_seed(const Case& c, std::uint32_t seed, Stats& st) {
  SynthOptions o = c.synth;
  o.seed = seed;
  SyntheticSeries series(o);
  const std::size_t poor = o.frames / 2;
  PoorFrame frames(series, poor, c.poor_blur);
  RegistrationSettings settings;
  settings.model = c.model;
  const auto t0 = std::chrono::steady_clock::now();
  RegistrationOperator op(frames, settings);
  std::vector<Registration> elements;
  for (std::size_t k = 0; k < frames.frame_count(); ++k) elements.push_back(op.element(k));
  auto regs =
      sequential_inclusive_scan(elements, [&](const Registration& a, const Registration& b) { return op(a, b); });
  const auto t1 = std::chrono::steady_clock::now();
  // As drift.csv shows them: each frame's own part plus the series' common part.
  auto u = with_series_common(estimate_drift_uncertainty(op, regs, 0, regs.size(), 1, nullptr, nullptr));
  const auto t2 = std::chrono::steady_clock::now();
  st.seconds += std::chrono::duration<double>(t2 - t0).count();
  st.uncertainty_seconds += std::chrono::duration<double>(t2 - t1).count();
  const Point centre = series.centre();
  std::vector<double> sig;
  SeedSums& sums = st.seeds.emplace_back();
  struct Row {
    double ex, ey, sx, sy;
  };
  std::vector<Row> rows;
  for (std::size_t k = 1; k < regs.size(); ++k) {
    if (k == poor) continue;
    const Point d = regs[k].transform.displacement(centre), t = series.drift(k);
    const double ex = d.x - t.x, ey = d.y - t.y;
    if (std::hypot(ex, ey) > 1.0) {  // a lattice-period jump: outside what a local sigma can describe
      ++st.jumps;
      continue;
    }
    const double zx = ex / u[k].sigma_dx, zy = ey / u[k].sigma_dy;
    sums.zx2 += zx * zx;
    sums.zy2 += zy * zy;
    // The 95% region of the 2-D estimate per axis, as a user would read the columns.
    sums.inside += (std::abs(zx) <= 1.96 ? 1 : 0) + (std::abs(zy) <= 1.96 ? 1 : 0);
    sums.count += 2;
    sig.push_back(u[k].sigma());
    rows.push_back({ex, ey, u[k].sigma_dx, u[k].sigma_dy});
    if (std::getenv("BENCH_VERBOSE"))
      std::printf("  k=%zu err %.4f %.4f sigma %.4f %.4f flags %u it %d\n", k, ex, ey, u[k].sigma_dx, u[k].sigma_dy,
                  regs[k].flags, regs[k].iterations);
  }
  if (std::getenv("BENCH_VERBOSE"))
    std::printf("  poor k=%zu sigma %.4f %.4f flags %u singular %d\n", poor, u[poor].sigma_dx, u[poor].sigma_dy,
                regs[poor].flags, u[poor].singular ? 1 : 0);
  split_common(rows, summarize_uncertainty(u), sums, st.below);
  std::nth_element(sig.begin(), sig.begin() + static_cast<std::ptrdiff_t>(sig.size() / 2), sig.end());
  const double median = sig[sig.size() / 2];
  st.median_sigma += median;
  st.ratios.push_back(u[poor].sigma() / median);
}

struct Figures {
  double zx = 0, zy = 0, in95 = 0, ox = 0, oy = 0;
};

Figures figures(const std::vector<SeedSums>& seeds, const std::vector<std::size_t>& pick) {
  SeedSums t;
  for (std::size_t i : pick) {
    t.zx2 += seeds[i].zx2;
    t.zy2 += seeds[i].zy2;
    t.inside += seeds[i].inside;
    t.count += seeds[i].count;
    t.ox2 += seeds[i].ox2;
    t.oy2 += seeds[i].oy2;
    t.own_count += seeds[i].own_count;
  }
  const double n = std::max<double>(1.0, static_cast<double>(t.count) / 2.0);
  const double no = std::max<double>(1.0, static_cast<double>(t.own_count));
  return {std::sqrt(t.zx2 / n), std::sqrt(t.zy2 / n), 100.0 * static_cast<double>(t.inside) / (2.0 * n),
          std::sqrt(t.ox2 / no), std::sqrt(t.oy2 / no)};
}

// 90% bootstrap intervals over the seeds: how far the figures themselves
// could move with another set of seeds (6 seeds of 16 frames leave
// z-RMS uncertain by about +-0.1, enough to make a calibrated case "miss").
std::pair<Figures, Figures> bootstrap(const std::vector<SeedSums>& seeds) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<std::size_t> draw(0, seeds.size() - 1);
  std::vector<double> zx, zy, in, ox, oy;
  std::vector<std::size_t> pick(seeds.size());
  for (int b = 0; b < 2000; ++b) {
    for (auto& i : pick) i = draw(rng);
    const Figures f = figures(seeds, pick);
    zx.push_back(f.zx);
    zy.push_back(f.zy);
    in.push_back(f.in95);
    ox.push_back(f.ox);
    oy.push_back(f.oy);
  }
  auto at = [](std::vector<double>& v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
  };
  return {{at(zx, 0.05), at(zy, 0.05), at(in, 0.05), at(ox, 0.05), at(oy, 0.05)},
          {at(zx, 0.95), at(zy, 0.95), at(in, 0.95), at(ox, 0.95), at(oy, 0.95)}};
}

// The 90% range of the RMS of n unit-normal draws (Wilson-Hilferty's
// chi-square quantiles): where the common part's z-RMS over n series lies
// when the common sigma is right.
std::pair<double, double> unit_rms_range(double n) {
  auto q = [n](double z) {
    const double a = 2.0 / (9.0 * n), c = 1.0 - a + z * std::sqrt(a);
    return std::sqrt(c * c * c);
  };
  return {q(-1.645), q(1.645)};
}

// P(X >= k) for X ~ Binomial(n, p).
double binomial_tail(int n, int k, double p) {
  double tail = 0;
  for (int i = k; i <= n; ++i)
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * std::log(p) +
                     (n - i) * std::log1p(-p));
  return std::min(1.0, tail);
}

// The common part's z of every series of every case, per axis and both
// together, against a unit normal's RMS for that many draws; and the cases
// whose own 90% check missed against what an exact sigma would miss
// (1 - 0.9^2 of them: two axes).
void print_pooled_common(const std::vector<double>& x, const std::vector<double>& y, int cases, int misses) {
  auto rms = [](const std::vector<double>& v) {
    double s = 0;
    for (double z : v) s += z * z;
    return v.empty() ? 0.0 : std::sqrt(s / static_cast<double>(v.size()));
  };
  std::vector<double> both = x;
  both.insert(both.end(), y.begin(), y.end());
  const auto [lo, hi] = unit_rms_range(static_cast<double>(both.size()));
  const auto [alo, ahi] = unit_rms_range(static_cast<double>(x.size()));
  const double zb = rms(both), zx = rms(x), zy = rms(y);
  const double p_miss = 1.0 - 0.9 * 0.9;
  std::printf(
      "# common part over the %d cases: z-RMS %5.3f over %zu draws (unit normal: %5.3f-%5.3f) %s; x %5.3f y %5.3f "
      "(%zu draws each: %5.3f-%5.3f); cases missing their own range %d of %d (exact sigma: %.1f expected, "
      "P(>= %d) = %.2f)\n",
      cases, zb, both.size(), lo, hi, zb >= lo && zb <= hi ? "ok" : "MISS", zx, zy, x.size(), alo, ahi, misses, cases,
      p_miss * cases, misses, binomial_tail(cases, misses, p_miss));
}

// A low-contrast specimen that is no lattice: white noise smoothed
// anisotropically (sigma 3 px along x, 1.2 px along y), 512^2, fixed seed:
// an amorphous film's texture with a preferred direction.
std::shared_ptr<const Frame> amorphous_content() {
  static const std::shared_ptr<const Frame> content = [] {
    Frame f(512, 512, 0.0f);
    std::mt19937 rng(7);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (float& v : f.pixels) v = g(rng);
    Frame sx = gaussian_smooth(f, 1.2);  // isotropic first, then more along x
    Frame out(512, 512, 0.0f);
    const int r = 9;  // taps at x - r .. x + r, Gaussian 2.8 px
    std::vector<double> w;
    for (int i = -r; i <= r; ++i) w.push_back(std::exp(-0.5 * (i * i) / (2.8 * 2.8)));
    for (int y = 0; y < 512; ++y)
      for (int x = 0; x < 512; ++x) {
        double acc = 0;
        int i = -r;
        for (double wi : w) acc += wi * sx.at(std::clamp(x + i++, 0, 511), y);
        out.at(x, y) = static_cast<float>(acc);
      }
    return std::make_shared<const Frame>(std::move(out));
  }();
  return content;
}

// The real ABF image from the optional sample data (the folder named by
// $DRIFTSCAN_SAMPLE_DATA; README, "Sample data"), or nullptr: its case is left out.
std::shared_ptr<const Frame> real_content() {
  static const std::shared_ptr<const Frame> content = []() -> std::shared_ptr<const Frame> {
    const char* data = std::getenv("DRIFTSCAN_SAMPLE_DATA");
    if (!data || !*data) {
      std::fprintf(stderr, "# real-content case left out: DRIFTSCAN_SAMPLE_DATA is not set\n");
      return nullptr;
    }
    const fs::path p = fs::path(data) / "stem_abf_series.tif";
    if (!fs::exists(p)) {
      std::fprintf(stderr, "# real-content case left out: %s is absent\n", p.c_str());
      return nullptr;
    }
    return std::make_shared<const Frame>(TiffSeries::open(p.string())->frame(0));
  }();
  return content;
}

}  // namespace

// The benchmark's cases: lattices at doses 1-30 from 64² to 256² (512² and
// 1024² unless quick), real and low-contrast content; `frames` each.
std::vector<Case> benchmark_cases(std::size_t frames, bool quick) {
  std::vector<Case> cases;
  auto add = [&](const std::string& name, int size, double dose, Lattice lattice, MotionModel model, double blur,
                 bool content = false, double background = 0.05, const std::shared_ptr<const Frame>& image = nullptr) {
    Case c;
    c.name = name;
    c.synth.frames = frames;
    c.synth.width = c.synth.height = size;
    c.synth.dose = dose;
    c.synth.lattice = lattice;
    c.synth.drift_step = 0.3;
    if (model == MotionModel::rigid) c.synth.rotation_step_deg = 0.05;
    c.model = model;
    c.poor_blur = blur;
    c.synth.background = background;
    if (image) c.synth.content = image;
    if (content) {
      c.synth.content = real_content();
      if (!c.synth.content) return;
    }
    cases.push_back(c);
  };
  add("hex 128 dose 1 translation", 128, 1, Lattice::hex, MotionModel::translation, 3.0);
  add("hex 128 dose 6 translation", 128, 6, Lattice::hex, MotionModel::translation, 3.0);
  add("hex 128 dose 30 translation", 128, 30, Lattice::hex, MotionModel::translation, -1);
  add("square 256 dose 1 translation", 256, 1, Lattice::square, MotionModel::translation, 3.0);
  add("square 256 dose 6 rigid", 256, 6, Lattice::square, MotionModel::rigid, 3.0);
  add("hex 256 dose 30 rigid", 256, 30, Lattice::hex, MotionModel::rigid, -1);
  // Its prefilter is ~4 px (0.15 x its 29 px fringes): a 3 px blur would not make the frame poorer.
  add("real content 256 dose 6 translation", 256, 6, Lattice::hex, MotionModel::translation, 10.0, true);
  // The edges (issue #35): low dose on a lattice, small frames, and
  // low-contrast content that is no lattice (a background 2-3x the
  // structure's range: little contrast, much noise).
  add("hex 256 dose 2 translation", 256, 2, Lattice::hex, MotionModel::translation, 3.0);
  add("hex 64 dose 2 translation", 64, 2, Lattice::hex, MotionModel::translation, 3.0);
  add("amorphous low-contrast 256 dose 5", 256, 5, Lattice::hex, MotionModel::translation, 10.0, false, 2.0,
      amorphous_content());
  add("real content low-contrast 256 dose 5", 256, 5, Lattice::hex, MotionModel::translation, 10.0, true, 3.0);
  if (!quick) {
    add("hex 512 dose 3 translation", 512, 3, Lattice::hex, MotionModel::translation, 3.0);
    add("hex 1024 dose 6 translation", 1024, 6, Lattice::hex, MotionModel::translation, 3.0);
  }
  return cases;
}

int main(int argc, char** argv) {
  bool quick = false;
  int seeds = 30;
  std::size_t frames = 16;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = static_cast<std::size_t>(std::atoi(argv[++i]));
  }
  if (quick) seeds = std::min(seeds, 10);
  const char* only = std::getenv("BENCH_CASE");
  const std::vector<Case> cases = benchmark_cases(frames, quick);
  std::printf(
      "# bench_drift_uncertainty: %d seeds x %zu frames per case (poor frame excluded from z; machine shared);\n"
      "# [lo-hi]: 90%% bootstrap interval over the seeds; the verdict is on the estimate itself\n",
      seeds, frames);
  // The common part over the cases (the target: "consistent with a unit
  // normal"). One series is one draw of it, so one case's draws miss their
  // 90% range on one axis or the other in about one case of five even when
  // sigma is exact; the pooled draws of every case decide.
  std::vector<double> pooled_x, pooled_y;
  int cases_run = 0, common_misses = 0;
  // The own part and the whole error pooled the same way (z^2 summed over
  // every frame of every case): a bias shared by the cases shows in both
  // when it is the whole sigma's, in the common part alone when the split's.
  SeedSums pooled_frames;
  std::printf("%-38s %19s %19s %17s %9s %9s %7s %7s %5s\n", "case", "zrms_x [90%]", "zrms_y [90%]", "in95% [90%]",
              "poor/med", "median_s", "s_total", "s_sigma", "jumps");
  for (const Case& c : cases) {
    if (only && c.name.find(only) == std::string::npos) continue;
    Stats st;
    for (int s = 0; s < seeds; ++s) run_seed(c, static_cast<std::uint32_t>(101 + 17 * s), st);
    std::sort(st.ratios.begin(), st.ratios.end());
    std::vector<std::size_t> all(st.seeds.size());
    std::iota(all.begin(), all.end(), 0);
    const Figures f = figures(st.seeds, all);
    const auto [lo, hi] = bootstrap(st.seeds);
    const bool ok = f.zx >= 0.8 && f.zx <= 1.25 && f.zy >= 0.8 && f.zy <= 1.25 && f.in95 >= 92 && f.in95 <= 98 &&
                    st.ratios.front() >= 3.0 && st.jumps == 0;
    // Outside a target, but inside it within the interval: more seeds decide.
    auto reachable = [](double l, double h, double tl, double th) { return h >= tl && l <= th; };
    const bool undecided = !ok && st.ratios.front() >= 3.0 && st.jumps == 0 && reachable(lo.zx, hi.zx, 0.8, 1.25) &&
                           reachable(lo.zy, hi.zy, 0.8, 1.25) && reachable(lo.in95, hi.in95, 92, 98);
    std::printf(
        "%-38s %5.3f [%5.3f-%5.3f] %5.3f [%5.3f-%5.3f] %5.1f [%4.1f-%5.1f] %9.2f %9.4f %7.1f %7.2f %5zu %s (poor: "
        "%s)\n",
        c.name.c_str(), f.zx, lo.zx, hi.zx, f.zy, lo.zy, hi.zy, f.in95, lo.in95, hi.in95, st.ratios.front(),
        st.median_sigma / seeds, st.seconds, st.uncertainty_seconds, st.jumps,
        ok ? "ok" : (undecided ? "MISS? (inside its interval: more seeds)" : "MISS"),
        c.poor_blur > 0 ? "blurred" : "mostly blank");
    double cx2 = 0, cy2 = 0;
    for (const SeedSums& sd : st.seeds) {
      cx2 += sd.cx * sd.cx;
      cy2 += sd.cy * sd.cy;
    }
    const double ns = static_cast<double>(st.seeds.size());
    const auto [ulo, uhi] = unit_rms_range(ns);
    const double czx = std::sqrt(cx2 / ns), czy = std::sqrt(cy2 / ns);
    const bool own_ok = f.ox >= 0.85 && f.ox <= 1.2 && f.oy >= 0.85 && f.oy <= 1.2;
    const bool common_ok = czx >= ulo && czx <= uhi && czy >= ulo && czy <= uhi;
    ++cases_run;
    common_misses += common_ok ? 0 : 1;
    for (const SeedSums& sd : st.seeds) {
      pooled_x.push_back(sd.cx), pooled_y.push_back(sd.cy);
      pooled_frames.zx2 += sd.zx2, pooled_frames.zy2 += sd.zy2, pooled_frames.count += sd.count;
      pooled_frames.ox2 += sd.ox2, pooled_frames.oy2 += sd.oy2, pooled_frames.own_count += sd.own_count;
    }
    std::printf(
        "%-38s own z-RMS x %5.3f [%5.3f-%5.3f] y %5.3f [%5.3f-%5.3f] %s; common z-RMS x %5.3f y %5.3f (unit "
        "normal over %d series: %4.2f-%4.2f) %s; sigma below common: %zu frames\n",
        "", f.ox, lo.ox, hi.ox, f.oy, lo.oy, hi.oy, own_ok ? "ok" : "MISS", czx, czy, static_cast<int>(ns), ulo, uhi,
        common_ok ? "ok" : "MISS", st.below);
    std::fflush(stdout);
  }
  if (cases_run > 1) {
    print_pooled_common(pooled_x, pooled_y, cases_run, common_misses);
    const double n = std::max(1.0, static_cast<double>(pooled_frames.count) / 2.0);
    const double no = std::max(1.0, static_cast<double>(pooled_frames.own_count));
    std::printf(
        "# own part over the %d cases: z-RMS x %5.3f y %5.3f over %zu frames; whole error z-RMS x %5.3f y %5.3f\n",
        cases_run, std::sqrt(pooled_frames.ox2 / no), std::sqrt(pooled_frames.oy2 / no), pooled_frames.own_count,
        std::sqrt(pooled_frames.zx2 / n), std::sqrt(pooled_frames.zy2 / n));
  }
  return 0;
}
