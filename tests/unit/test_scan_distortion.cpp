// Scan-distortion estimation on small raster-scanned synthetic series: the
// per-line drift it recovers must be well below what one rigid shift per
// frame leaves, the jitter must be found, and a series without intra-frame
// drift must not be made worse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/core/frame_source.hpp"
#include "driftscan/core/progress.hpp"
#include "driftscan/core/simd_level.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "scanned_series.hpp"

using namespace driftscan;

using driftscan::test::rigid_drift;
using driftscan::test::scanned_series;

namespace {

// A smooth test specimen, and a frame showing it through `map`.
double test_specimen(double x, double y) {
  return std::sin(2 * M_PI * x / 9.3) + 0.5 * std::cos(2 * M_PI * y / 7.1 + x / 13.0);
}
Frame probed_specimen(const FrameScanMap& map, int width, int height) {
  Frame frame(width, height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const Point q = map.probed(x, y);
      frame.at(x, y) = static_cast<float>(test_specimen(q.x, q.y));
    }
  return frame;
}
// The worst difference from the specimen at its own pixels, 4 pixels in
// from the edges: of `aligned` (what lines_aligned() made of `frame`) and of
// `frame` itself.
std::pair<double, double> worst_against_specimen(const Frame& aligned, const Frame& frame) {
  double worst = 0, unaligned = 0;
  for (int y = 4; y < frame.height - 4; ++y)
    for (int x = 4; x < frame.width - 4; ++x) {
      worst = std::max(worst, std::fabs(aligned.at(x, y) - test_specimen(x, y)));
      unaligned = std::max(unaligned, std::fabs(frame.at(x, y) - test_specimen(x, y)));
    }
  return {worst, unaligned};
}

// The rigid result of today's pipeline: one shift per frame (drift.csv convention).
// RMS over every line of every frame of (estimate - truth), after removing
// the mean difference: a constant offset only moves the average (the gauge).
template <class Estimate>
double line_drift_rms(const SyntheticSeries& s, Estimate&& estimate) {
  const ScanTiming& t = s.scan_timing();
  std::vector<Point> e;
  Point mean;
  for (std::size_t k = 0; k < s.frame_count(); ++k)
    for (int l = 0; l < t.lines(); ++l) {
      const Point truth = s.drift_at(t.line_mid_time(k, l)), est = estimate(k, l);
      e.push_back({est.x - truth.x, est.y - truth.y});
      mean.x += e.back().x, mean.y += e.back().y;
    }
  mean.x /= e.size(), mean.y /= e.size();
  double sum = 0;
  for (const Point& d : e) sum += (d.x - mean.x) * (d.x - mean.x) + (d.y - mean.y) * (d.y - mean.y);
  return std::sqrt(sum / e.size());
}

// RMS of the jitter error, each frame's mean removed from the truth too (it
// is drift as far as any estimate can tell).
double jitter_rms(const SyntheticSeries& s, const ScanModel& m, bool zero = false) {
  const ScanTiming& t = s.scan_timing();
  double sum = 0;
  std::size_t count = 0;
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    double mean = 0;
    for (int l = 0; l < t.lines(); ++l) mean += s.line_jitter(k, l);
    mean /= t.lines();
    for (int l = 0; l < t.lines(); ++l) {
      const double est = zero ? 0.0 : m.jitter[k][static_cast<std::size_t>(l)];
      sum += std::pow(est - (s.line_jitter(k, l) - mean), 2), ++count;
    }
  }
  return std::sqrt(sum / count);
}

// A model of series s's first `frames` frames: a path through the true
// drift at every third line's mid time, and a made-up jitter pattern.
ScanModel model_near_truth(const SyntheticSeries& s, std::size_t frames) {
  const ScanTiming& t = s.scan_timing();
  std::vector<DriftSample> samples;
  for (std::size_t k = 0; k < frames; ++k)
    for (int l = 0; l < t.lines(); l += 3) {
      const double tl = t.line_mid_time(k, l);
      samples.push_back({tl, s.drift_at(tl).x, s.drift_at(tl).y, 1.0});
    }
  DriftPathSettings ps;
  ps.knot_spacing = choose_knot_spacing(t.frame_time(), 10);
  ScanModel m;
  m.path = DriftPath::fit(samples, 0.0, t.frame_start(frames), ps);
  m.jitter.assign(frames, std::vector<double>(static_cast<std::size_t>(t.lines())));
  for (std::size_t k = 0; k < frames; ++k)
    for (int l = 0; l < t.lines(); ++l) m.jitter[k][static_cast<std::size_t>(l)] = 0.05 * ((l * 7) % 5 - 2);
  return m;
}

}  // namespace

// With two frames each frame's template is the other frame alone: the rounds
// must still settle (before the halfway step, the two frames' errors swapped
// from round to round and never did), and the gauge is frame 0's mean position.
TEST(ScanDistortion, TwoFramesConvergeInFrameZerosGauge) {
  SynthOptions o = scanned_series();
  o.frames = 2;
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  const std::vector<Point> rigid = rigid_drift(s);
  ScanDistortionSettings settings;
  settings.band_lines = 16;
  settings.max_band_offset = 0.3 * 9.0;
  settings.max_rounds = 8;
  ScanDistortionResult r = estimate_scan_distortion(s, t, rigid, settings);
  const double rigid_err = line_drift_rms(s, [&](std::size_t k, int) { return rigid[k]; });
  const double err = line_drift_rms(s, [&](std::size_t k, int l) { return r.model.path.at(t.line_mid_time(k, l)); });
  std::printf("two frames: per-line drift RMS error %.4f px (rigid %.4f px), %zu rounds, converged %d\n", err,
              rigid_err, r.rounds.size(), r.converged ? 1 : 0);
  for (std::size_t i = 0; i < r.rounds.size(); ++i)
    std::printf("  round %zu: path change %.4f px\n", i + 1, r.rounds[i].path_change);
  EXPECT_TRUE(r.converged);
  EXPECT_LT(err, 0.5 * rigid_err);
  Point mean;
  for (int l = 0; l < t.lines(); ++l) {
    const Point d = r.model.path.at(t.line_mid_time(0, l));
    mean.x += d.x / t.lines(), mean.y += d.y / t.lines();
  }
  EXPECT_NEAR(mean.x, 0.0, 1e-9);
  EXPECT_NEAR(mean.y, 0.0, 1e-9);
}

TEST(ScanDistortion, PerLineDriftErrorIsWellBelowRigid) {
  SyntheticSeries s(scanned_series());
  const ScanTiming& t = s.scan_timing();
  const std::vector<Point> rigid = rigid_drift(s);
  ScanDistortionSettings settings;
  settings.band_lines = 16;
  settings.max_band_offset = 0.3 * 9.0;
  ScanDistortionResult r = estimate_scan_distortion(s, t, rigid, settings);

  const double rigid_err = line_drift_rms(s, [&](std::size_t k, int) { return rigid[k]; });
  const double err = line_drift_rms(s, [&](std::size_t k, int l) { return r.model.path.at(t.line_mid_time(k, l)); });
  const double jitter_err = jitter_rms(s, r.model), jitter_none = jitter_rms(s, r.model, true);
  std::printf(
      "scan distortion: per-line drift RMS error %.4f px (rigid %.4f px), jitter RMS error %.4f px "
      "(%.4f px if left at 0), %zu rounds, converged %d\n",
      err, rigid_err, jitter_err, jitter_none, r.rounds.size(), r.converged ? 1 : 0);
  for (std::size_t i = 0; i < r.rounds.size(); ++i)
    std::printf("  round %zu: path change %.4f px, %.2f s\n", i + 1, r.rounds[i].path_change, r.rounds[i].seconds);
  EXPECT_GT(rigid_err, 0.5);         // the series really is distorted
  EXPECT_LT(err, 0.25 * rigid_err);  // well below rigid
  EXPECT_LT(err, 0.15);
  // Lines that run between atom rows see little along the fast axis at this
  // dose, so only part of the jitter is recoverable; the rest the prior keeps at 0.
  EXPECT_LT(jitter_err, 0.7 * jitter_none);
}

// The fits and the sampling in their AVX2 + FMA build (taken where the CPU
// has it) and in the baseline SSE2 one: the same estimate within float
// rounding's reach, far below the 0.001 px the results are held to, and not
// the same to the last bit (the FMA build really ran).
TEST(ScanDistortion, Avx2AndBaselineBuildsGiveTheSameEstimate) {
  force_simd_level(SimdLevel::avx2);
  if (simd_level() != SimdLevel::avx2) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  SyntheticSeries s(scanned_series());
  const ScanTiming& t = s.scan_timing();
  const std::vector<Point> rigid = rigid_drift(s);
  ScanDistortionSettings settings;
  settings.band_lines = 16;
  settings.max_band_offset = 0.3 * 9.0;
  const ScanDistortionResult fast = estimate_scan_distortion(s, t, rigid, settings);
  force_simd_level(SimdLevel::baseline);
  const ScanDistortionResult base = estimate_scan_distortion(s, t, rigid, settings);
  force_simd_level(SimdLevel::avx2);
  double path = 0.0, jitter = 0.0;
  for (std::size_t k = 0; k < s.frame_count(); ++k)
    for (int l = 0; l < t.lines(); ++l) {
      const Point a = fast.model.path.at(t.line_mid_time(k, l)), b = base.model.path.at(t.line_mid_time(k, l));
      path = std::max({path, std::fabs(a.x - b.x), std::fabs(a.y - b.y)});
      const auto at = static_cast<std::size_t>(l);
      const double ja = k < fast.model.jitter.size() && at < fast.model.jitter[k].size() ? fast.model.jitter[k][at] : 0;
      const double jb = k < base.model.jitter.size() && at < base.model.jitter[k].size() ? base.model.jitter[k][at] : 0;
      jitter = std::max(jitter, std::fabs(ja - jb));
    }
  std::printf("AVX2 + FMA against SSE2: path %.2g px, jitter %.2g px at most\n", path, jitter);
  EXPECT_LT(path, 1e-4);
  EXPECT_LT(jitter, 1e-4);
  EXPECT_GT(std::max(path, jitter), 0.0);
}

TEST(ScanDistortion, PixelShowingInvertsProbed) {
  SynthOptions o = scanned_series();
  o.frames = 4;
  o.width = 40;
  o.height = 30;
  o.scan_direction = ScanDirection::serpentine;
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  const ScanModel m = model_near_truth(s, 4);
  // The per-frame map tabulates d(t) linearly within each line: its inverse
  // is exact for itself, and it agrees with the spline model to far below a
  // pixel even at this drift (3 px per frame time on 30-line frames).
  double worst = 0, worst_table = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const FrameScanMap map(t, m, k);
    for (int y = 2; y < 28; y += 3)
      for (int x = 2; x < 38; x += 5) {
        const Point p = map.pixel_showing(map.probed(x, y));
        worst = std::max({worst, std::fabs(p.x - x), std::fabs(p.y - y)});
        const Point a = map.probed(x, y), b = m.probed(t, k, x, y);
        worst_table = std::max({worst_table, std::fabs(a.x - b.x), std::fabs(a.y - b.y)});
      }
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_LT(worst_table, 2e-3);
}

// The averaging's inverse solves each line's affine map directly: for every
// scan direction it returns the pixel probed() started from, and its line,
// from a guess of line 0 (each output row's start) or a neighbouring line.
TEST(ScanDistortion, PixelShowingNearSolvesEachLine) {
  for (ScanDirection direction : {ScanDirection::normal, ScanDirection::serpentine, ScanDirection::rotated90}) {
    SynthOptions o = scanned_series();
    o.frames = 3;
    o.width = 40;
    o.height = 30;
    o.scan_direction = direction;
    SyntheticSeries s(o);
    const ScanTiming& t = s.scan_timing();
    const ScanModel m = model_near_truth(s, 3);
    const bool rotated = direction == ScanDirection::rotated90;
    double worst = 0;
    int wrong_line = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      const FrameScanMap map(t, m, k);
      for (double slow = 1.0; slow < 27.0; slow += 0.7)
        for (double along = 0.5; along < 28.0; along += 2.3) {
          // Away from line boundaries, where either line is right.
          const double from_centre = slow - std::floor(slow + 0.5);
          if (std::fabs(from_centre) > 0.35) continue;
          const double x = rotated ? slow : along, y = rotated ? along : slow;
          const int line = static_cast<int>(std::floor(slow + 0.5));
          for (int guess : {0, line + 1, line - 1}) {
            int l = guess;
            const Point p = map.pixel_showing_near(map.probed(x, y), l);
            worst = std::max({worst, std::fabs(p.x - x), std::fabs(p.y - y)});
            wrong_line += l != line;
          }
        }
    }
    EXPECT_LT(worst, 1e-9) << to_string(direction);
    EXPECT_EQ(wrong_line, 0) << to_string(direction);
  }
}

// The averaging's row inverse (steps along a run of one line, solved again
// where the line changes) is pixel_showing_near() at each point of the row,
// each from its neighbour's line (as the averaging called it), for lines
// that are rows, serpentine rows or columns (a line change at every pixel);
// and where that pixel shows the point (between two jittered lines some
// points are shown by neither), probed() of it is the point.
TEST(ScanDistortion, PixelsShowingRowArePixelShowingNearAlongTheRow) {
  for (ScanDirection direction : {ScanDirection::normal, ScanDirection::serpentine, ScanDirection::rotated90}) {
    SynthOptions o = scanned_series();
    o.frames = 3;
    o.width = 40;
    o.height = 30;
    o.scan_direction = direction;
    SyntheticSeries s(o);
    const ScanTiming& t = s.scan_timing();
    const ScanModel m = model_near_truth(s, 3);
    double worst = 0, worst_shown = 0;
    int inside = 0, shown = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      const FrameScanMap map(t, m, k);
      for (double y = -2.25; y < 32.0; y += 0.5) {
        const Point q0{-3.3, y};
        std::vector<Point> row(48);
        map.pixels_showing_row(q0, static_cast<int>(row.size()), row.data());
        int line = 0;
        for (std::size_t i = 0; i < row.size(); ++i) {
          const Point q{q0.x + static_cast<double>(i), q0.y};
          const Point n = map.pixel_showing_near(q, line), p = row[i];
          worst = std::max({worst, std::fabs(n.x - p.x), std::fabs(n.y - p.y)});
          if (p.x < 0 || p.y < 0 || p.x > 39 || p.y > 29) continue;
          ++inside;
          const Point r = map.probed(n.x, n.y);
          if (std::hypot(r.x - q.x, r.y - q.y) > 1e-6) continue;
          ++shown;
          const Point rp = map.probed(p.x, p.y);
          worst_shown = std::max({worst_shown, std::fabs(rp.x - q.x), std::fabs(rp.y - q.y)});
        }
      }
    }
    EXPECT_GT(inside, 2000) << to_string(direction);
    EXPECT_GT(shown, inside * 3 / 4) << to_string(direction);
    EXPECT_LT(worst, 1e-9) << to_string(direction);
    EXPECT_LT(worst_shown, 1e-9) << to_string(direction);
  }
}

// The average samples each line at its own fast-axis position: a frame whose
// lines are displaced by known jitters comes back as the undisplaced image
// (to the interpolation's accuracy), for lines that are rows or columns.
TEST(ScanDistortion, LinesAlignedPutsEachLineAtItsTruePosition) {
  for (ScanDirection direction : {ScanDirection::normal, ScanDirection::rotated90}) {
    ScanTimingSettings ts;
    ts.direction = direction;
    const ScanTiming t(ts, 48, 40);
    ScanModel m;
    m.jitter.assign(1, std::vector<double>(static_cast<std::size_t>(t.lines())));
    for (int l = 0; l < t.lines(); ++l) m.jitter[0][static_cast<std::size_t>(l)] = 0.6 * std::sin(1.7 * l);
    const FrameScanMap map(t, m, 0);
    ASSERT_TRUE(map.has_jitter());
    const Frame frame = probed_specimen(map, 48, 40);
    const Frame aligned = map.lines_aligned(frame);
    const FrameScanMap smooth = map.without_jitter();
    EXPECT_FALSE(smooth.has_jitter());
    for (int y = 4; y < 36; ++y)
      for (int x = 4; x < 44; ++x) {
        const Point q = smooth.probed(x, y);
        EXPECT_NEAR(q.x, x, 1e-12);
        EXPECT_NEAR(q.y, y, 1e-12);
      }
    const auto [worst, unaligned] = worst_against_specimen(aligned, frame);
    EXPECT_LT(worst, 0.02) << "direction " << static_cast<int>(direction);
    EXPECT_GT(unaligned, 20 * worst);
  }
}

TEST(ScanDistortion, UnworkableSettingsAreOneLineErrors) {
  SynthOptions o = scanned_series();
  o.frames = 3;
  o.width = 32;
  o.height = 32;
  SyntheticSeries s(o);
  const std::vector<Point> rigid(3);
  auto message = [&](const ScanDistortionSettings& settings, const std::vector<Point>& drift) {
    try {
      estimate_scan_distortion(s, s.scan_timing(), drift, settings);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_input);
      return std::string(e.what());
    }
    return std::string();
  };
  ScanDistortionSettings bands;
  bands.band_lines = 2;
  EXPECT_NE(message(bands, rigid).find("band lines"), std::string::npos);
  bands.band_lines = 64;
  EXPECT_NE(message(bands, rigid).find("band lines"), std::string::npos);
  EXPECT_NE(message({}, std::vector<Point>(2)).find("one rigid drift per frame"), std::string::npos);
  ScanDistortionSettings offset;
  offset.max_band_offset = 0;
  EXPECT_NE(message(offset, rigid).find("max band offset"), std::string::npos);
  ScanDistortionSettings filter_scale;
  filter_scale.template_filter_noise_scale = 0;
  EXPECT_NE(message(filter_scale, rigid).find("template filter noise scale"), std::string::npos);
  ScanTimingSettings other;
  EXPECT_THROW(estimate_scan_distortion(s, ScanTiming(other, 16, 16), rigid), Error);
}

TEST(ScanDistortion, NearlyRigidScanIsNotMadeWorse) {
  // A slow, steady drift: frames barely sheared, no jitter. The per-line
  // model must not invent distortion the rigid result does not have.
  SynthOptions o = scanned_series();
  o.frames = 10;
  o.drift_linear_x = 0.25;
  o.drift_linear_y = -0.15;
  o.drift_wobble = 0.0;
  o.drift_step = 0.0;
  o.jitter = 0.0;
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  const std::vector<Point> rigid = rigid_drift(s);
  ScanDistortionSettings settings;
  settings.max_band_offset = 0.3 * 9.0;
  ScanDistortionResult r = estimate_scan_distortion(s, t, rigid, settings);
  const double rigid_err = line_drift_rms(s, [&](std::size_t k, int) { return rigid[k]; });
  const double err = line_drift_rms(s, [&](std::size_t k, int l) { return r.model.path.at(t.line_mid_time(k, l)); });
  double jitter = 0;
  for (const auto& frame : r.model.jitter)
    for (double j : frame) jitter += j * j;
  jitter = std::sqrt(jitter / (r.model.jitter.size() * r.model.jitter.front().size()));
  std::printf(
      "scan distortion, nearly rigid: per-line drift RMS error %.4f px (rigid %.4f px), jitter found %.4f px RMS, "
      "%zu rounds\n",
      err, rigid_err, jitter, r.rounds.size());
  EXPECT_LE(err, rigid_err + 0.01);
  // There is no jitter: what is found is the noise of matching single lines
  // at this dose (measured 0.12 px RMS with the default prior of 0.5 px) -
  // a known limit of this first version, bounded here so it cannot grow.
  EXPECT_LT(jitter, 0.15);
}

TEST(ScanDistortion, SerpentineAndRotatedScansToo) {
  for (ScanDirection direction : {ScanDirection::serpentine, ScanDirection::rotated90}) {
    SynthOptions o = scanned_series();
    o.frames = 10;
    o.scan_direction = direction;
    // Milder than above: between frames 2 and 3 that path moves 5 px along
    // x, more than half the lattice period, where the rigid pair registration
    // (the start) jumps a period on the rotated scan.
    o.drift_linear_x = 2.0;
    o.drift_linear_y = 1.0;
    o.drift_wobble = 1.0;
    SyntheticSeries s(o);
    const ScanTiming& t = s.scan_timing();
    const std::vector<Point> rigid = rigid_drift(s);
    ScanDistortionSettings settings;
    settings.max_band_offset = 0.3 * 9.0;
    ScanDistortionResult r = estimate_scan_distortion(s, t, rigid, settings);
    const double rigid_err = line_drift_rms(s, [&](std::size_t k, int) { return rigid[k]; });
    const double err = line_drift_rms(s, [&](std::size_t k, int l) { return r.model.path.at(t.line_mid_time(k, l)); });
    std::printf(
        "scan distortion, %s scan: per-line drift RMS error %.4f px (rigid %.4f px), jitter RMS error %.4f px "
        "(%.4f px if left at 0)\n",
        to_string(direction).c_str(), err, rigid_err, jitter_rms(s, r.model), jitter_rms(s, r.model, true));
    EXPECT_LT(err, 0.25 * rigid_err) << to_string(direction);
    EXPECT_LT(jitter_rms(s, r.model), jitter_rms(s, r.model, true)) << to_string(direction);
  }
}

namespace {

// The first n frames of a scanned series (scanned_series() unless given)
// averaged in specimen coordinates near the true model, with each frame's
// kept contribution; with `true_jitter` the model holds every line's true jitter.
struct AveragedScan {
  explicit AveragedScan(std::size_t n, const SynthOptions& o = scanned_series(), bool true_jitter = false)
      : series(o), model(model_near_truth(series, n)) {
    if (true_jitter)
      for (std::size_t k = 0; k < n; ++k)
        for (int l = 0; l < series.scan_timing().lines(); ++l)
          model.jitter[k][static_cast<std::size_t>(l)] = series.line_jitter(k, l);
    for (std::size_t k = 0; k < n; ++k) frames.push_back(series.frame(k));
    average = average_in_specimen_coordinates(FrameVector(frames), series.scan_timing(), model, &noise, &own);
  }
  auto parts() const { return std::tie(frames, model, noise, own, average); }
  SyntheticSeries series;
  std::vector<Frame> frames;
  ScanModel model;
  AverageNoise noise;
  std::vector<FrameContribution> own;
  SpecimenImage average;
};

// The scanned series with 0.5 px jitter, averaged under its true model
// (jitter included), and the steps with that average as their template.
struct StepsOnTrueAverage {
  static SynthOptions jittered() {
    SynthOptions o = scanned_series();
    o.jitter = 0.5;
    return o;
  }
  StepsOnTrueAverage()
      : scan(jittered().frames, jittered(), true),
        steps(scan.series.scan_timing(), ScanDistortionSettings{}, scan.series.frame_count()) {
    steps.set_template(scan.average, scan.model.path, scan.noise, std::move(scan.own));
  }
  AveragedScan scan;
  ScanDistortionSteps steps;
};

// Frame k fitted by two template sources: the same bands and line offsets, bit for bit.
void expect_same_fits(const ScanDistortionSteps& a_steps, const ScanDistortionSteps& b_steps, const Frame& frame,
                      std::size_t k, const ScanModel& model) {
  const auto a = a_steps.fit_frame(frame, k, model), b = b_steps.fit_frame(frame, k, model);
  ASSERT_EQ(a.bands.size(), b.bands.size());
  for (std::size_t i = 0; i < a.bands.size(); ++i) {
    EXPECT_EQ(a.bands[i].dx, b.bands[i].dx);
    EXPECT_EQ(a.bands[i].dy, b.bands[i].dy);
  }
  EXPECT_EQ(a.line_offset, b.line_offset) << "frame " << k;
}

}  // namespace

TEST(ScanDistortion, KeptContributionsGiveTheSameFitsAsSamplingAgain) {
  const AveragedScan scan(6);
  const ScanTiming& t = scan.series.scan_timing();
  const std::size_t n = scan.frames.size();
  const auto& [frames, model, noise, own, average] = scan.parts();
  ASSERT_EQ(own.size(), n);
  // What the pass kept for a frame is what sampling it alone gives.
  const SpecimenGrid grid{average.origin, average.image.width, average.image.height};
  const FrameContribution again = sample_in_specimen_coordinates(frames[3], FrameScanMap(t, model, 3), grid);
  ASSERT_EQ(again.value.size(), own[3].value.size());
  EXPECT_EQ(again.i0, own[3].i0);
  EXPECT_EQ(again.j0, own[3].j0);
  for (std::size_t i = 0; i < again.value.size(); ++i)
    ASSERT_TRUE(again.value[i] == own[3].value[i] || (std::isnan(again.value[i]) && std::isnan(own[3].value[i])));

  ScanDistortionSettings settings;
  ScanDistortionSteps kept(t, settings, n), sampled(t, settings, n);
  // Frames 2.. kept, as a rank of frames 2..5 holds them; frames 0 and 1 sampled again.
  kept.set_template(average, model.path, noise, std::vector<FrameContribution>(own.begin() + 2, own.end()), 2);
  sampled.set_template(average, model.path, noise);
  for (std::size_t k : {std::size_t{0}, std::size_t{3}, std::size_t{5}})
    expect_same_fits(kept, sampled, frames[k], k, model);
}

TEST(ScanDistortion, ContributionBudgetKeepsFramesInOrderUntilFull) {
  std::vector<FrameContribution> kept;
  ContributionBudget budget(&kept, 10 * sizeof(float));
  for (int k = 0; k < 4; ++k) {
    FrameContribution c;
    c.width = 2, c.height = 2;
    c.value.assign(4, static_cast<float>(k));
    budget.keep(std::move(c));
  }
  ASSERT_EQ(kept.size(), 4u);
  EXPECT_EQ(kept[0].value.size(), 4u);
  EXPECT_EQ(kept[1].value.size(), 4u);
  EXPECT_TRUE(kept[2].value.empty());  // 12 floats would be over 10
  EXPECT_TRUE(kept[3].value.empty());  // and none after the first that did not fit
}

// Beyond the memory budget a contribution is spilled to a temporary file
// and comes back bit for bit (NaN where the frame does not cover included);
// the spilled frames' leave-one-out fits are then those of frames kept in
// memory.
TEST(ScanDistortion, ContributionBudgetSpillsWhatDoesNotFitAndReadsItBackExactly) {
  std::vector<FrameContribution> kept;
  ContributionBudget budget(&kept, 4 * sizeof(float));
  for (int k = 0; k < 3; ++k) {
    FrameContribution c;
    c.i0 = k, c.j0 = 2 * k, c.width = 3, c.height = 2;
    c.value = {1.5f * k, -2.0f, std::numeric_limits<float>::quiet_NaN(), 3.25f, 1e-30f, static_cast<float>(k)};
    budget.keep(std::move(c));
  }
  ASSERT_EQ(kept.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const FrameContribution& c = kept[static_cast<std::size_t>(k)];
    if (!c.spill) GTEST_SKIP() << "no temporary file could be made here";
    EXPECT_TRUE(c.value.empty());  // 6 floats are over 4: none in memory
    const FrameContribution back = c.read_back();
    ASSERT_EQ(back.value.size(), 6u);
    EXPECT_EQ(back.i0, k);
    EXPECT_EQ(back.j0, 2 * k);
    EXPECT_EQ(back.width, 3);
    EXPECT_EQ(back.height, 2);
    EXPECT_EQ(back.value[0], 1.5f * k);
    EXPECT_EQ(back.value[1], -2.0f);
    EXPECT_TRUE(std::isnan(back.value[2]));
    EXPECT_EQ(back.value[4], 1e-30f);
    EXPECT_EQ(back.value[5], static_cast<float>(k));
  }
  // Not spilled, not kept: nothing to read back (the fit samples it again).
  EXPECT_TRUE(FrameContribution{}.read_back().value.empty());
}

TEST(ScanDistortion, SpilledContributionsGiveTheSameFitsAsKeptOnes) {
  const AveragedScan scan(4);
  const ScanTiming& t = scan.series.scan_timing();
  const std::size_t n = scan.frames.size();
  const auto& [frames, model, noise, own, average] = scan.parts();
  ASSERT_EQ(own.size(), n);
  std::vector<FrameContribution> spilled;
  ContributionBudget budget(&spilled, 0);
  for (const FrameContribution& c : own) budget.keep(FrameContribution(c));
  if (!spilled[0].spill) GTEST_SKIP() << "no temporary file could be made here";
  ScanDistortionSettings settings;
  ScanDistortionSteps kept(t, settings, n), read(t, settings, n);
  kept.set_template(average, model.path, noise, own);
  read.set_template(average, model.path, noise, spilled);
  for (std::size_t k = 0; k < n; ++k) expect_same_fits(kept, read, frames[k], k, model);
}

// Each line's predicted precision must be what its fit really scatters by,
// under shot noise too, where the bright pixels are noisier than the dark
// ones: the jitter's shrinkage and the reported precision rest on it
// (unweighted fits predicted 0.090 px on the benchmark's first case where
// they scattered by 0.139).
TEST(ScanDistortion, LineFitPrecisionMatchesItsScatterUnderShotNoise) {
  SynthOptions o = scanned_series();
  o.dose = 6.0;  // a few counts a pixel: the noise's variance follows the signal
  o.jitter = 0.5;
  AveragedScan scan(o.frames, o, true);
  const SyntheticSeries& s = scan.series;
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  const std::vector<Frame>& frames = scan.frames;
  const ScanModel& model = scan.model;
  ScanDistortionSteps steps(t, ScanDistortionSettings{}, n);
  steps.set_template(scan.average, model.path, scan.noise, std::move(scan.own));
  double error = 0.0, predicted = 0.0, count = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    const auto fit = steps.fit_frame(frames[k], k, model);
    ASSERT_EQ(fit.line_offset.size(), static_cast<std::size_t>(t.lines()));
    for (int l = 0; l < t.lines(); ++l) {
      const std::size_t at = static_cast<std::size_t>(l);
      if (!std::isfinite(fit.line_variance[at])) continue;
      error += std::pow(fit.line_offset[at] - s.line_jitter(k, l), 2);
      predicted += fit.line_variance[at], count += 1;
    }
  }
  ASSERT_GT(count, 0.9 * static_cast<double>(n) * t.lines());
  const double ratio = std::sqrt(error / predicted);
  EXPECT_GT(ratio, 0.8) << "the lines scatter less than predicted";
  EXPECT_LT(ratio, 1.25) << "the lines scatter more than predicted";
}

// Lines whose specimen few other frames saw (frame 0's first lines and the
// last frame's last ones: the drift carries the other frames off them) are
// fitted all the same, against the template of the frames that did, and
// their offsets hold their jitter: they are not left at 0.
TEST(ScanDistortion, LinesFewOtherFramesSawAreFittedToo) {
  const StepsOnTrueAverage on;
  const SyntheticSeries& s = on.scan.series;
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  const std::vector<Frame>& frames = on.scan.frames;
  const ScanModel& model = on.scan.model;
  const ScanDistortionSteps& steps = on.steps;
  // The drift moves the specimen 1.5 px a frame down: of frame 0's first 12
  // lines, the first ones no other frame saw at all, the next ones at most a
  // few (the band fits need n / 4 = 4 of them); the same for the last
  // frame's last lines.
  double error = 0.0, zero = 0.0, fitted = 0.0;
  for (const std::size_t k : {std::size_t{0}, n - 1}) {
    const auto fit = steps.fit_frame(frames[k], k, model);
    ASSERT_EQ(fit.line_offset.size(), static_cast<std::size_t>(t.lines()));
    int unfitted = 0;
    for (int i = 0; i < 12; ++i) {
      const int l = k == 0 ? i : t.lines() - 1 - i;
      const std::size_t at = static_cast<std::size_t>(l);
      if (!std::isfinite(fit.line_variance[at])) {
        ++unfitted;
        continue;
      }
      error += std::pow(fit.line_offset[at] - s.line_jitter(k, l), 2);
      zero += std::pow(s.line_jitter(k, l), 2), fitted += 1;
    }
    EXPECT_LE(unfitted, 4) << "frame " << k << ": lines other frames saw are left unfitted";
  }
  ASSERT_GT(fitted, 0.0);
  EXPECT_LT(std::sqrt(error / fitted), 0.5 * std::sqrt(zero / fitted)) << "the edge lines' offsets hold their jitter";
}

// A line on the thin edge of the average (its pixels' weights scaled down
// by the template's share there) is no less precise than its variance says:
// over the edge lines of the first and last frames, the offsets' squared
// errors against the truth come to about their variances, as over the
// lines in the middle of the frames. 1 / information (the down-weighted
// sums) read those lines' variance share^-1 times too large.
TEST(ScanDistortion, EdgeLinesVariancesMatchTheirErrors) {
  const StepsOnTrueAverage on;
  const AveragedScan& scan = on.scan;
  const SyntheticSeries& s = scan.series;
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  const ScanDistortionSteps& steps = on.steps;
  double edge[2] = {}, middle[2] = {};  // sum of squared errors, sum of variances
  for (std::size_t k = 0; k < n; ++k) {
    const auto fit = steps.fit_frame(scan.frames[k], k, scan.model);
    ASSERT_EQ(fit.line_offset.size(), static_cast<std::size_t>(t.lines()));
    double mean = 0.0, count = 0.0;  // the frame's mean offset is the path's
    for (int l = 0; l < t.lines(); ++l)
      if (std::isfinite(fit.line_variance[static_cast<std::size_t>(l)]))
        mean += fit.line_offset[static_cast<std::size_t>(l)] - s.line_jitter(k, l), count += 1;
    mean /= std::max(1.0, count);
    for (int l = 0; l < t.lines(); ++l) {
      const auto at = static_cast<std::size_t>(l);
      if (!std::isfinite(fit.line_variance[at])) continue;
      const bool on_edge = (k == 0 && l < 12) || (k == n - 1 && l >= t.lines() - 12);
      const bool inner = k > 0 && k + 1 < n && l >= 32 && l < t.lines() - 32;
      if (!on_edge && !inner) continue;
      double* sums = on_edge ? edge : middle;
      sums[0] += std::pow(fit.line_offset[at] - s.line_jitter(k, l) - mean, 2), sums[1] += fit.line_variance[at];
    }
  }
  ASSERT_GT(edge[1], 0.0);
  ASSERT_GT(middle[1], 0.0);
  const double edge_ratio = edge[0] / edge[1], middle_ratio = middle[0] / middle[1];
  std::printf("squared error / variance: edge lines %.3f, middle lines %.3f\n", edge_ratio, middle_ratio);
  EXPECT_GT(edge_ratio, 0.6 * middle_ratio) << "the edge lines' variances are not inflated";
  EXPECT_LT(edge_ratio, 2.0 * middle_ratio);
}

// The jitter's variance pooled over frames: frames whose own estimates
// scatter within their sampling error share the pooled variance; a frame
// whose jitter is far larger keeps (most of) its own and lifts the others
// only a little; a frame without line fits gets none.
TEST(ScanDistortion, JitterVariancePooledOverFramesThatShareIt) {
  const SyntheticSeries s(scanned_series());
  ScanDistortionSteps steps(s.scan_timing(), ScanDistortionSettings{}, 11);
  const double lines = 256.0, v = 0.04, tau2 = 0.09;
  std::vector<ScanDistortionSteps::JitterSpread> frames;
  for (int k = 0; k < 10; ++k) {
    // Each frame's excess within a third of its sampling sd, 2^1/2 (tau2 + v) / lines^1/2.
    const double own = tau2 + (k % 2 ? 1.0 : -1.0) * 0.3 * std::sqrt(2.0 / lines) * (tau2 + v);
    frames.push_back({lines * (own + v), lines * v, lines});
  }
  const std::vector<double> shared = steps.pooled_jitter_variances(frames);
  ASSERT_EQ(shared.size(), frames.size());
  for (const double t : shared) EXPECT_NEAR(t, tau2, 1e-12) << "frames that share the variance get the pooled one";

  frames.push_back({lines * (0.25 + v), lines * v, lines});  // one frame with far more jitter
  frames.push_back({});                                      // and one without line fits
  const std::vector<double> mixed = steps.pooled_jitter_variances(frames);
  ASSERT_EQ(mixed.size(), frames.size());
  EXPECT_GT(mixed[10], 0.2) << "the frame with more jitter keeps most of its own";
  for (int k = 0; k < 10; ++k) EXPECT_NEAR(mixed[static_cast<std::size_t>(k)], tau2, 0.02);
  EXPECT_LT(mixed[11], 0.0) << "no lines, no variance";
}

// Frames scanned in several directions: the drift path has about two knots a
// band (here 32 a frame) instead of one every two bands, so it follows a
// drift that wanders from band to band (the slow axes' samples hold no
// jitter); frames in one direction keep the coarser knots. Noise-free band
// samples of a random walk (0.3 px per frame time) and hardly any smoothing:
// how near the path can pass them.
TEST(ScanDistortion, SeveralScanDirectionsGetFinerPathKnots) {
  ScanTimingSettings ts;
  ts.dwell = 1e-6;
  const std::size_t frames = 8;
  std::mt19937 rng(7);
  std::normal_distribution<double> step(0.0, 0.3 / 4.0);  // 16 bands a frame
  auto fitted_rms = [&](std::vector<double> rotations, double& knot_spacing, double& frame_time) {
    ts.rotation_deg = std::move(rotations);
    const ScanTiming timing(ts, 256, 256);
    ScanDistortionSettings settings;
    settings.smoothing = 1e-3;  // nearly through the samples, as far as the knots let it
    const ScanDistortionSteps steps(timing, settings, frames);
    std::vector<DriftSample> samples;
    rng.seed(7);
    double x = 0.0, y = 0.0;
    for (std::size_t k = 0; k < frames; ++k)
      for (int b = 0; b < 16; ++b) {
        x += step(rng), y += step(rng);
        samples.push_back({timing.line_mid_time(k, 16 * b + 8), x, y, 1.0});
      }
    const DriftPath path = steps.fit_path(samples);
    knot_spacing = path.knot_spacing(), frame_time = timing.frame_time();
    // Against the samples, the gauge's constant taken out.
    Point mean;
    for (const DriftSample& d : samples) {
      const Point p = path.at(d.t);
      mean.x += (p.x - d.dx) / samples.size(), mean.y += (p.y - d.dy) / samples.size();
    }
    double sum = 0.0;
    for (const DriftSample& d : samples) {
      const Point p = path.at(d.t);
      sum += std::pow(p.x - d.dx - mean.x, 2) + std::pow(p.y - d.dy - mean.y, 2);
    }
    return std::sqrt(sum / (2.0 * samples.size()));
  };
  double one_knots = 0.0, several_knots = 0.0, frame_time = 0.0;
  const double one = fitted_rms({}, one_knots, frame_time);
  const double several = fitted_rms({0.0, 90.0, 180.0, 270.0}, several_knots, frame_time);
  EXPECT_NEAR(one_knots, frame_time / 8.0, 1e-9 * frame_time) << "one direction: a knot every two bands";
  EXPECT_NEAR(several_knots, frame_time / 32.0, 1e-9 * frame_time) << "several directions: two knots a band";
  EXPECT_LT(several, 0.1 * one) << "the finer knots follow the band-to-band walk (one direction " << one
                                << " px, several " << several << " px)";
}

// A frame with nothing of the specimen in it (here: noise only) cannot be
// followed: fewer than half its bands register, it is flagged and left out
// of the average, and the others' drift is not bent by it. Frames the caller
// leaves out are in no average either.
TEST(ScanDistortion, FramesThatCannotBeFollowedAreLeftOut) {
  SyntheticSeries s(scanned_series());
  const ScanTiming& t = s.scan_timing();
  const std::size_t n = s.frame_count();
  std::vector<Frame> frames;
  for (std::size_t k = 0; k < n; ++k) frames.push_back(s.frame(k));
  // Frame 6: the same mean counts, no specimen.
  double mean = 0;
  for (float v : frames[6].pixels) mean += v;
  mean /= static_cast<double>(frames[6].pixels.size());
  std::mt19937 generator(3);
  std::poisson_distribution<int> counts(mean);
  for (float& v : frames[6].pixels) v = static_cast<float>(counts(generator));
  FrameVector source(frames);
  // The true drift at each frame's mid time as the rigid start (the pipeline
  // would flag frame 6 itself; here the correction must).
  std::vector<Point> start;
  const Point d0 = s.drift_at(t.frame_mid_time(0));
  for (std::size_t k = 0; k < n; ++k) {
    const Point d = s.drift_at(t.frame_mid_time(k));
    start.push_back({d.x - d0.x, d.y - d0.y});
  }
  ScanDistortionSettings settings;
  settings.max_band_offset = 0.3 * 9.0;
  const ScanDistortionResult r = estimate_scan_distortion(source, t, start, settings, {2});
  EXPECT_EQ(r.not_followed, std::vector<std::size_t>{6});
  EXPECT_EQ(r.left_out, (std::vector<std::size_t>{2, 6}));
  // The average holds the other frames only: its coverage is at most n - 2.
  float most = 0;
  for (float c : r.average.coverage.pixels) most = std::max(most, c);
  EXPECT_EQ(most, static_cast<float>(n - 2));
  // The path is as good as with frame 6 left out from the start (its band
  // samples, had they been kept, would have bent it).
  const ScanDistortionResult clean = estimate_scan_distortion(s, t, start, settings, {2, 6});
  const double err = line_drift_rms(s, [&](std::size_t k, int l) { return r.model.path.at(t.line_mid_time(k, l)); });
  const double err_clean =
      line_drift_rms(s, [&](std::size_t k, int l) { return clean.model.path.at(t.line_mid_time(k, l)); });
  std::printf("frame 6 of noise: per-line drift error %.4f px (left out from the start: %.4f px)\n", err, err_clean);
  EXPECT_TRUE(clean.not_followed.empty());
  EXPECT_LT(err, err_clean + 0.02);
}

// A frame's line field displaces each sample along the fast axis by place in
// the line, in acquisition order (reversed on a serpentine scan's odd
// lines); lines_aligned() undoes it with the jitter, so the field-free map
// samples the specimen where it is.
TEST(ScanDistortion, LineFieldMovesSamplesByPlaceInTheLine) {
  for (ScanDirection direction : {ScanDirection::normal, ScanDirection::serpentine, ScanDirection::rotated90}) {
    ScanTimingSettings ts;
    ts.direction = direction;
    const ScanTiming t(ts, 64, 40);
    ScanModel m;
    m.jitter.assign(1, std::vector<double>(static_cast<std::size_t>(t.lines())));
    for (int l = 0; l < t.lines(); ++l) m.jitter[0][static_cast<std::size_t>(l)] = 0.3 * std::sin(1.7 * l);
    m.field = {{0.9, 0.7, 0.5, 0.1, -0.1, -0.3, -0.2, 0.1}};
    m.field_basis = LineFieldBasis(t.samples_per_line(), 8, 0.5 * t.samples_per_line());
    const LineFieldBasis& basis = m.field_basis;
    const std::vector<double> h = basis.tabulate(m.field[0]);
    const FrameScanMap map(t, m, 0), jitter_only(t, m.path, m.jitter[0], 0);
    const Point fast = t.fast_axis();
    for (int y = 0; y < t.height(); y += 7)
      for (int x = 0; x < t.width(); x += 5) {
        const Point a = map.probed(x, y), b = jitter_only.probed(x, y);
        const double s = t.sample_of(x, y);
        EXPECT_NEAR((a.x - b.x) * fast.x + (a.y - b.y) * fast.y, h[static_cast<std::size_t>(s)], 1e-9);
        EXPECT_NEAR((a.x - b.x) * fast.y + (a.y - b.y) * fast.x, 0.0, 1e-12);  // nothing across the line
        // The model itself (not through a map) says the same, and the map's inverse undoes it.
        const Point m_q = m.probed(t, 0, x, y), back = map.pixel_showing(a);
        EXPECT_NEAR(m_q.x, a.x, 1e-9);
        EXPECT_NEAR(m_q.y, a.y, 1e-9);
        EXPECT_NEAR(back.x, x, 1e-3);  // 4 fixed-point steps; the field moves ~0.1 px a sample
        EXPECT_NEAR(back.y, y, 1e-3);
      }
    const Frame frame = probed_specimen(map, t.width(), t.height());
    const auto [worst, unaligned] = worst_against_specimen(map.lines_aligned(frame), frame);
    EXPECT_LT(worst, 0.03) << "direction " << static_cast<int>(direction);
    EXPECT_GT(unaligned, 10 * worst);
  }
}

// On frames whose lines start with a fly-back hysteresis (1 px x 0.5-1.5
// per frame, decaying over 8 samples), the estimated line fields follow it:
// over each line's first samples, the shared part and the whole. The 16
// frames drift 45 px along the fast axis, hardly past the field's 32-sample
// extent, so few frames' own parts can be told from the others' (no other
// frame saw their line starts' specimen clear of its own): those keep the
// shared field, and the test asks no more of each frame.
TEST(ScanDistortion, LineFieldFollowsTheHysteresis) {
  SynthOptions o = scanned_series();
  o.jitter = 0.1;
  o.scan_hysteresis = 1.0;
  o.scan_hysteresis_length = 8.0;
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  const std::vector<Point> rigid = rigid_drift(s);
  ScanDistortionSettings settings;
  settings.max_band_offset = 0.3 * 9.0;
  const ScanDistortionResult without = estimate_scan_distortion(s, t, rigid, settings);
  settings.line_field_knots = 8;
  const ScanDistortionResult r = estimate_scan_distortion(s, t, rigid, settings);
  ASSERT_EQ(r.model.field.size(), s.frame_count());
  EXPECT_TRUE(without.model.field.empty());
  const std::size_t n = s.frame_count();
  const int first = 16;
  double err = 0, none = 0;
  std::vector<double> mean_est(first, 0.0), mean_truth(first, 0.0);
  for (std::size_t k = 0; k < n; ++k) {
    const std::vector<double> h = r.model.field_basis.tabulate(r.model.field[k]);
    ASSERT_EQ(h.size(), static_cast<std::size_t>(t.samples_per_line()));
    for (int x = 0; x < first; ++x) {
      const double e = h[static_cast<std::size_t>(x)], truth = s.line_field(k, x);
      err += (e - truth) * (e - truth), none += truth * truth;
      mean_est[static_cast<std::size_t>(x)] += e / n, mean_truth[static_cast<std::size_t>(x)] += truth / n;
    }
    // Zero (with its slope) past its extent.
    for (int x = static_cast<int>(std::ceil(r.model.field_basis.extent())); x < t.samples_per_line(); ++x)
      ASSERT_EQ(h[static_cast<std::size_t>(x)], 0.0);
  }
  double shared_err = 0, shared_none = 0;
  for (int x = 0; x < first; ++x) {
    const double d = mean_est[static_cast<std::size_t>(x)] - mean_truth[static_cast<std::size_t>(x)];
    shared_err += d * d,
        shared_none += mean_truth[static_cast<std::size_t>(x)] * mean_truth[static_cast<std::size_t>(x)];
  }
  const double drift = line_drift_rms(s, [&](std::size_t k, int l) { return r.model.path.at(t.line_mid_time(k, l)); });
  const double drift_without =
      line_drift_rms(s, [&](std::size_t k, int l) { return without.model.path.at(t.line_mid_time(k, l)); });
  std::printf(
      "line field over the first %d samples: RMS error %.3f px (%.3f px if none), shared part %.3f px (%.3f px if "
      "none); per-line drift error %.4f px (%.4f px without the field)\n",
      first, std::sqrt(err / (first * n)), std::sqrt(none / (first * n)), std::sqrt(shared_err / first),
      std::sqrt(shared_none / first), drift, drift_without);
  EXPECT_LT(err, 0.25 * none);
  EXPECT_LT(shared_err, 0.1 * shared_none);
  EXPECT_LT(drift, drift_without + 0.01);
}

// A series without hysteresis keeps (nearly) no line field: the fields are
// noise fitted, shrunk to the prior, and bend nothing.
TEST(ScanDistortion, LineFieldStaysNearZeroWithoutHysteresis) {
  SynthOptions o = scanned_series();
  o.jitter = 0.1;
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  const std::vector<Point> rigid = rigid_drift(s);
  ScanDistortionSettings settings;
  settings.max_band_offset = 0.3 * 9.0;
  settings.line_field_knots = 8;
  const ScanDistortionResult r = estimate_scan_distortion(s, t, rigid, settings);
  // Over the field's extent: every frame's, and their mean.
  const std::size_t extent = static_cast<std::size_t>(r.model.field_basis.extent());
  std::vector<double> mean(extent, 0.0);
  double sum = 0;
  for (const auto& f : r.model.field) {
    const std::vector<double> h = r.model.field_basis.tabulate(f);
    for (std::size_t x = 0; x < extent; ++x) sum += h[x] * h[x], mean[x] += h[x] / r.model.field.size();
  }
  double shared = 0;
  for (double v : mean) shared += v * v;
  const double rms = std::sqrt(sum / (extent * r.model.field.size())), shared_rms = std::sqrt(shared / extent);
  std::printf("line field without hysteresis, over its extent: RMS %.4f px (the shared part %.4f px)\n", rms,
              shared_rms);
  EXPECT_LT(rms, 0.15);
  EXPECT_LT(shared_rms, 0.1);
}

// The samples at a line's start no line field can be measured at: the
// field's extent (+2, the template's margin) less the drift's span along
// the fast axis, over the frames not left out; none without a field.
TEST(ScanDistortion, LineFieldUnseenSamplesFollowTheDriftAlongTheFastAxis) {
  ScanTimingSettings ts;
  const ScanTiming t(ts, 128, 64);
  ScanDistortionSettings s;
  s.line_field_knots = 8;  // extent 0.25: 32 samples
  const std::vector<Point> drift{{0, 0}, {10, 50}, {20, -40}};
  EXPECT_EQ(line_field_unseen_samples(t, s, drift), 14);       // 34 - 20
  EXPECT_EQ(line_field_unseen_samples(t, s, drift, {2}), 24);  // 34 - 10
  EXPECT_EQ(line_field_unseen_samples(t, s, {{0, 0}, {40, 0}}), 0);
  s.line_field_knots = 0;
  EXPECT_EQ(line_field_unseen_samples(t, s, drift), 0);
  // Lines as columns: the fast axis is y (128 x 64 frames: 64 samples a line, extent 16).
  ts.direction = ScanDirection::rotated90;
  const ScanTiming r(ts, 128, 64);
  s.line_field_knots = 4;
  EXPECT_EQ(line_field_unseen_samples(r, s, {{0, 0}, {40, 5}}), 13);  // 18 - 5
}

// bench_scan_distortion's drift and scan clock (its cases 1 and 10-17): a
// 9 px hex lattice drifting 3, 1.5 px a frame with a wobble of 1.5 px (period
// 6 frames) and a 0.3 px random walk; 2 us a pixel, fly-backs of 25% of a
// line and 5% of a frame; `frames` of size² at `dose` with line `jitter`.
namespace {
SynthOptions bench_drift(unsigned seed, std::size_t frames, int size, double dose, double jitter) {
  SynthOptions o;
  o.frames = frames;
  o.width = o.height = size;
  o.dose = dose;
  o.jitter = jitter;
  o.period = 9.0;
  o.drift_linear_x = 3.0, o.drift_linear_y = 1.5;
  o.drift_wobble = 1.5, o.drift_wobble_period = 6.0;
  o.drift_step = 0.3;
  o.scan_dwell = 2e-6, o.scan_line_flyback = 0.25, o.scan_frame_flyback = 0.05;
  o.seed = seed;
  return o;
}

// The squares of each line's jitter error over its sigma_jitter added to z2,
// the lines to n: the error against the truth less each frame's mean jitter
// (that mean is the path's, to any estimate).
void add_jitter_z2(const SyntheticSeries& s, const ScanDistortionResult& r, double& z2, std::size_t& n) {
  const ScanTiming& t = s.scan_timing();
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    double frame_mean = 0.0;
    for (int l = 0; l < t.lines(); ++l) frame_mean += s.line_jitter(k, l) / t.lines();
    for (int l = 0; l < t.lines(); ++l, ++n) {
      const auto at = static_cast<std::size_t>(l);
      z2 += std::pow((r.model.jitter[k][at] - (s.line_jitter(k, l) - frame_mean)) / r.jitter_sigma[k][at], 2);
    }
  }
}
}  // namespace

// lines.csv's sigma_dx / sigma_dy against the truth on bench_scan_distortion's
// first case (hex, 3 px a frame with a wobble and a 0.3 px random walk,
// jitter 0.5 px, dose 6; 24 frames of 128²), four other seeds: the path's
// error at every line, relative to its mean over the lines (the gauge the
// sigmas are of), over sigma has z-RMS 0.8-1.25 per axis, pooled over the four
// series, and so has the jitter's error (each frame's mean jitter removed from
// the truth) over sigma_jitter. A sample's whole residual variance as the
// unresolved drift (band noise and band-mean jitter included) gave path
// 0.54 / 0.85 on seeds 5 and 6. Four draws, not two: a draw's path z-RMS
// along x scatters by ±0.1-0.3 (bench_scan_distortion at 128², seeds 5-10:
// 0.71-1.37), and seeds 5 and 6 alone read x 0.813 before the line fits took
// the edge lines (0.782 after, while seed 9 went 1.368 -> 1.096).
TEST(ScanDistortion, LineSigmasAreCalibratedAgainstTheTruth) {
  double z2[3] = {0.0, 0.0, 0.0};
  std::size_t n = 0, nj = 0;
  for (unsigned seed : {5u, 6u, 7u, 8u}) {
    SyntheticSeries s(bench_drift(seed, 24, 128, 6.0, 0.5));
    const ScanTiming& t = s.scan_timing();
    const ScanDistortionResult r = estimate_scan_distortion(s, t, rigid_drift(s), ScanDistortionSettings{});
    ASSERT_FALSE(r.path_sigma.empty());
    std::vector<Point> e;
    Point mean;
    for (std::size_t k = 0; k < s.frame_count(); ++k)
      for (int l = 0; l < t.lines(); ++l) {
        const double tl = t.line_mid_time(k, l);
        e.push_back({r.model.path.at(tl).x - s.drift_at(tl).x, r.model.path.at(tl).y - s.drift_at(tl).y});
        mean.x += e.back().x / (s.frame_count() * t.lines()), mean.y += e.back().y / (s.frame_count() * t.lines());
      }
    std::size_t i = 0;
    for (std::size_t k = 0; k < s.frame_count(); ++k)
      for (int l = 0; l < t.lines(); ++l, ++i, ++n) {
        const Point sigma = r.path_sigma.sigma(t.line_mid_time(k, l));
        z2[0] += std::pow((e[i].x - mean.x) / sigma.x, 2), z2[1] += std::pow((e[i].y - mean.y) / sigma.y, 2);
      }
    ASSERT_EQ(r.jitter_sigma.size(), s.frame_count());
    add_jitter_z2(s, r, z2[2], nj);
  }
  for (int axis = 0; axis < 3; ++axis) {
    const double z = std::sqrt(z2[axis] / static_cast<double>(axis < 2 ? n : nj));
    std::printf("line sigma: %s z-RMS %.3f\n", axis == 0 ? "path x" : axis == 1 ? "path y" : "jitter", z);
    EXPECT_GT(z, 0.8);
    EXPECT_LT(z, 1.25);
  }
}

// The jitter is a line's offset less the path, so the path's own error along
// the line's fast axis is the jitter's too, not only the drift it leaves
// unresolved. One orthogonal pair (bench_scan_distortion's case 14: two
// frames of 256², 0/90, hex, jitter 0.3 px, dose 10) is where the path is
// least determined: each time is seen by one frame, and no third frame leans
// on it. With only the unresolved drift in sigma_jitter its z-RMS read
// 1.185-1.391 over the bench's seeds 1-5 and 11; here, four seeds pooled,
// the errors over sigma_jitter have z-RMS 0.8-1.25.
TEST(ScanDistortion, JitterSigmasHoldThePathsErrorOnALoneOrthogonalPair) {
  double z2 = 0.0;
  std::size_t n = 0;
  for (unsigned seed : {1u, 3u, 4u, 11u}) {
    SynthOptions o = bench_drift(seed, 2, 256, 10.0, 0.3);
    o.scan_rotation_deg = {0.0, 90.0};
    SyntheticSeries s(o);
    const ScanTiming& t = s.scan_timing();
    FrameVector frames;
    std::vector<Point> rigid;
    for (std::size_t k = 0; k < s.frame_count(); ++k) frames.push_back(s.frame(k)), rigid.push_back(s.drift(k));
    const ScanDistortionResult r = estimate_scan_distortion(frames, t, rigid, ScanDistortionSettings{});
    ASSERT_EQ(r.jitter_sigma.size(), s.frame_count());
    double seed_z2 = 0.0;
    std::size_t seed_n = 0;
    add_jitter_z2(s, r, seed_z2, seed_n);
    std::printf("seed %u: jitter z-RMS %.3f\n", seed, std::sqrt(seed_z2 / static_cast<double>(seed_n)));
    z2 += seed_z2, n += seed_n;
  }
  const double z = std::sqrt(z2 / static_cast<double>(n));
  std::printf("one orthogonal pair, four seeds: jitter z-RMS %.3f\n", z);
  EXPECT_GT(z, 0.8);
  EXPECT_LT(z, 1.25);
}
