// The first scan-distortion round on frames binned along the fast axis
// (FastAxisBinning): the binned scan keeps the clock, a model carried to the
// binned pixels and back shows the same specimen points, and a run whose
// first round is binned ends as close to the truth as a full-resolution one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "driftscan/core/progress.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/scan_distortion/fast_axis_binning.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "scanned_series.hpp"

using namespace driftscan;

using driftscan::test::rigid_drift;
using driftscan::test::scanned_series;

namespace {

// RMS over every line of (path - truth) at the line's mid time, the mean
// difference (the gauge) removed; and of the jitter error, each frame's
// mean jitter removed from the truth (drift as far as any estimate can tell).
Point errors(const SyntheticSeries& s, const ScanModel& m) {
  const ScanTiming& t = s.scan_timing();
  std::vector<Point> e;
  Point mean;
  double jitter = 0.0;
  for (std::size_t k = 0; k < s.frame_count(); ++k) {
    double jm = 0.0;
    for (int l = 0; l < t.lines(); ++l) jm += s.line_jitter(k, l) / t.lines();
    for (int l = 0; l < t.lines(); ++l) {
      const double tl = t.line_mid_time(k, l);
      const Point truth = s.drift_at(tl), est = m.path.at(tl);
      e.push_back({est.x - truth.x, est.y - truth.y});
      mean.x += e.back().x / (t.lines() * s.frame_count()), mean.y += e.back().y / (t.lines() * s.frame_count());
      jitter += std::pow(m.jitter[k][static_cast<std::size_t>(l)] - (s.line_jitter(k, l) - jm), 2);
    }
  }
  double sum = 0;
  for (const Point& d : e) sum += (d.x - mean.x) * (d.x - mean.x) + (d.y - mean.y) * (d.y - mean.y);
  return {std::sqrt(sum / e.size()), std::sqrt(jitter / e.size())};
}

}  // namespace

TEST(FastAxisBinning, BinnedScanKeepsTheClock) {
  for (ScanDirection direction : {ScanDirection::normal, ScanDirection::serpentine}) {
    ScanTimingSettings ts;
    ts.dwell = 2e-6, ts.line_flyback_fraction = 0.25, ts.frame_flyback = 3e-4, ts.direction = direction;
    const ScanTiming full(ts, 64, 48);
    const FastAxisBinning binning(full);
    const ScanTiming& b = binning.timing();
    EXPECT_EQ(b.samples_per_line(), 32);
    EXPECT_EQ(b.lines(), 48);
    EXPECT_DOUBLE_EQ(b.line_time(), full.line_time());
    EXPECT_DOUBLE_EQ(b.frame_time(), full.frame_time());
    // Binned pixel x is full pixels 2x and 2x + 1: recorded between them.
    for (int y : {0, 1, 17, 47})
      for (int x : {0, 5, 31}) {
        const double tb = b.time_of(3, x, y), t0 = full.time_of(3, 2 * x, y), t1 = full.time_of(3, 2 * x + 1, y);
        EXPECT_LE(std::fabs(tb - 0.5 * (t0 + t1)), 1.0001 * ts.dwell) << to_string(direction) << " " << x << "," << y;
      }
  }
}

TEST(FastAxisBinning, ModelCarriedToBinnedPixelsShowsTheSamePoints) {
  SyntheticSeries s(scanned_series());
  const ScanTiming& t = s.scan_timing();
  const FastAxisBinning binning(t);
  // A model with a path that moves along both axes and a jitter per line.
  std::vector<DriftSample> samples;
  for (std::size_t k = 0; k < 4; ++k)
    for (int l = 0; l < t.lines(); l += 8) {
      const double tl = t.line_mid_time(k, l);
      samples.push_back({tl, s.drift_at(tl).x, s.drift_at(tl).y, 1.0});
    }
  DriftPathSettings ps;
  ps.knot_spacing = choose_knot_spacing(t.frame_time(), 16);
  ScanModel full;
  full.path = DriftPath::fit(samples, 0.0, t.frame_start(4), ps);
  full.jitter.assign(4, std::vector<double>(static_cast<std::size_t>(t.lines())));
  for (int k = 0; k < 4; ++k)
    for (int l = 0; l < t.lines(); ++l)
      full.jitter[static_cast<std::size_t>(k)][static_cast<std::size_t>(l)] = 0.1 * ((l * 7 + k) % 5 - 2);
  const ScanModel binned = binning.binned(full);
  // Binned pixel (x, y) is full pixel (2x + 1/2, y): it shows full's point
  // in binned coordinates, ((q.x - 1/2) / 2, q.y).
  for (std::size_t k = 0; k < 4; ++k) {
    const FrameScanMap fm(t, full, k), bm(binning.timing(), binned, k);
    for (int y : {0, 31, 64, 127})
      for (int x : {0, 20, 63}) {
        const Point q = fm.probed(2 * x + 0.5, y), qb = bm.probed(x, y);
        EXPECT_NEAR(qb.x, 0.5 * (q.x - 0.5), 1e-3) << k << " " << x << "," << y;
        EXPECT_NEAR(qb.y, q.y, 1e-3) << k << " " << x << "," << y;
      }
  }
  // And back: the same model.
  const ScanModel back = binning.unbinned(binned);
  for (std::size_t k = 0; k < 4; ++k) {
    const double tl = t.line_mid_time(k, 40);
    EXPECT_NEAR(back.path.at(tl).x, full.path.at(tl).x, 1e-12);
    EXPECT_NEAR(back.path.at(tl).y, full.path.at(tl).y, 1e-12);
    EXPECT_NEAR(back.jitter[k][40], full.jitter[k][40], 1e-12);
  }
}

TEST(FastAxisBinning, BinnedFramesAreMeansOfPairsAlongTheRow) {
  Frame f(5, 2);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 5; ++x) f.at(x, y) = static_cast<float>(10 * y + x * x);
  const Frame b = FastAxisBinning::binned(f);
  ASSERT_EQ(b.width, 2);
  ASSERT_EQ(b.height, 2);
  EXPECT_FLOAT_EQ(b.at(0, 0), 0.5f);
  EXPECT_FLOAT_EQ(b.at(1, 1), 10.0f + 6.5f);
}

// The whole estimate with its first round binned against the same estimate
// at full resolution throughout: the binned round only has to bring the
// model near enough for the full-resolution rounds, which decide the result.
TEST(FastAxisBinning, BinnedFirstRoundEndsAsCloseToTheTruth) {
  SyntheticSeries s(scanned_series());
  const ScanTiming& t = s.scan_timing();
  const std::vector<Point> rigid = rigid_drift(s);
  ScanDistortionSettings settings;
  settings.max_band_offset = 0.3 * 9.0;
  settings.binned_first_round_from = 0;
  const ScanDistortionResult full = estimate_scan_distortion(s, t, rigid, settings);
  settings.binned_first_round_from = t.samples_per_line();
  ASSERT_TRUE(FastAxisBinning::applies(t, settings));
  const ScanDistortionResult binned = estimate_scan_distortion(s, t, rigid, settings);
  const Point ef = errors(s, full.model), eb = errors(s, binned.model);
  std::printf("full resolution: drift RMS error %.4f px, jitter %.4f px; binned first round: %.4f px, %.4f px\n", ef.x,
              ef.y, eb.x, eb.y);
  ASSERT_EQ(binned.rounds.size(), full.rounds.size());
  EXPECT_LT(eb.x, 1.2 * ef.x + 0.01);
  EXPECT_LT(eb.y, 1.2 * ef.y + 0.01);
  // The first round's path change is reported in full-resolution pixels.
  EXPECT_NEAR(binned.rounds[0].path_change, full.rounds[0].path_change, 0.3 * full.rounds[0].path_change);
}

TEST(FastAxisBinning, OnlyOneDirectionAlongRowsWithoutALineField) {
  ScanTimingSettings ts;
  ts.dwell = 1e-6;
  ScanDistortionSettings settings;
  EXPECT_TRUE(FastAxisBinning::applies(ScanTiming(ts, 1024, 64), settings));
  EXPECT_FALSE(FastAxisBinning::applies(ScanTiming(ts, 512, 64), settings));  // below binned_first_round_from
  settings.line_field_knots = 6;
  EXPECT_FALSE(FastAxisBinning::applies(ScanTiming(ts, 1024, 64), settings));
  settings.line_field_knots = 0;
  settings.max_rounds = 1;
  EXPECT_FALSE(FastAxisBinning::applies(ScanTiming(ts, 1024, 64), settings));  // no full-resolution round after it
  settings.max_rounds = 0;
  ts.rotation_deg = {0.0, 90.0};
  EXPECT_FALSE(FastAxisBinning::applies(ScanTiming(ts, 1024, 1024), settings));
  ts.rotation_deg = {};
  ts.direction = ScanDirection::rotated90;
  EXPECT_FALSE(FastAxisBinning::applies(ScanTiming(ts, 64, 1024), settings));
}
