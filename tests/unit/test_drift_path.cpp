// The drift path d(t): a smoothing spline through weighted drift samples. It
// must recover a known smooth path from noisy samples, stay smooth through
// frame boundaries (and the sample-free fly-back gaps), ignore a wild sample
// of low weight, and not depend on the order of its samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "driftscan/core/error.hpp"
#include "driftscan/scan_distortion/drift_path.hpp"

using namespace driftscan;

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kFrame = 0.5;    // frame time, s
constexpr double kActive = 0.45;  // of which scanning lines (the rest is frame fly-back)
constexpr int kFrames = 12;
constexpr int kBands = 16;  // drift samples per frame

// A drift like a real one: linear, a slow wobble over a few frames.
Point true_path(double t) {
  return {3.0 * t / kFrame + 0.8 * std::sin(2 * kPi * t / (3.7 * kFrame)),
          -1.5 * t / kFrame + 0.5 * std::cos(2 * kPi * t / (5.3 * kFrame) + 0.4)};
}

// One sample per band of lines, at the band's mid time; nothing in fly-backs.
std::vector<DriftSample> band_samples(double noise, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> n(0.0, noise);
  std::vector<DriftSample> out;
  for (int k = 0; k < kFrames; ++k)
    for (int b = 0; b < kBands; ++b) {
      double t = k * kFrame + (b + 0.5) * kActive / kBands;
      Point d = true_path(t);
      out.push_back({t, d.x + n(g), d.y + n(g), 1.0});
    }
  return out;
}

DriftPathSettings settings_for(double samples_per_frame, double smoothing = 1.0) {
  DriftPathSettings s;
  s.knot_spacing = choose_knot_spacing(kFrame, samples_per_frame);
  s.smoothing = smoothing;
  return s;
}

double rms_error(const DriftPath& p, double t0, double t1) {
  double sum = 0;
  int n = 0;
  for (double t = t0; t <= t1; t += 1e-3, ++n) {
    Point a = p.at(t), b = true_path(t);
    sum += (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y);
  }
  return std::sqrt(sum / n);
}

}  // namespace

TEST(DriftPath, KnotSpacingFollowsTheSamplesPerFrame) {
  EXPECT_DOUBLE_EQ(choose_knot_spacing(1.0, 16), 1.0 / 8);
  EXPECT_DOUBLE_EQ(choose_knot_spacing(1.0, 1), 1.0);  // one rigid shift per frame: one knot per frame
  EXPECT_DOUBLE_EQ(choose_knot_spacing(1.0, 1000), 1.0 / 32);
}

TEST(DriftPath, RecoversASmoothPathFromNoisySamples) {
  const double noise = 0.1;
  DriftPath p = DriftPath::fit(band_samples(noise, 7), 0.0, kFrames * kFrame, settings_for(kBands));
  double err = rms_error(p, 0.0, kFrames * kFrame);
  RecordProperty("rms_error_px", std::to_string(err));
  std::printf("drift path: rms error %.4f px from samples with %.2f px noise per axis\n", err, noise);
  // Averaging ~2 samples per knot interval (and the penalty) must beat the
  // noise of a single sample by a clear margin.
  EXPECT_LT(err, 0.5 * noise * std::sqrt(2.0));
  // Noise-free samples: only the spline's own approximation error remains.
  DriftPath exact = DriftPath::fit(band_samples(0.0, 7), 0.0, kFrames * kFrame, settings_for(kBands));
  EXPECT_LT(rms_error(exact, 0.0, kFrames * kFrame), 0.02);
}

TEST(DriftPath, ConstantVelocityIsFittedExactlyAcrossGaps) {
  // Only the first and last bands of each frame: wide sample-free gaps.
  std::vector<DriftSample> s;
  for (int k = 0; k < kFrames; ++k)
    for (double f : {0.05, 0.85}) {
      double t = (k + f) * kFrame;
      s.push_back({t, 2.0 * t + 1.0, -0.7 * t, 1.0});
    }
  DriftPath p = DriftPath::fit(s, 0.0, kFrames * kFrame, settings_for(kBands));
  for (double t = 0.0; t <= kFrames * kFrame; t += 0.0137) {
    EXPECT_NEAR(p.at(t).x, 2.0 * t + 1.0, 1e-9);
    EXPECT_NEAR(p.at(t).y, -0.7 * t, 1e-9);
  }
  EXPECT_NEAR(p.velocity(1.3).x, 2.0, 1e-8);
}

TEST(DriftPath, ContinuousThroughFrameBoundaries) {
  DriftPath p = DriftPath::fit(band_samples(0.1, 3), 0.0, kFrames * kFrame, settings_for(kBands));
  const double eps = 1e-7;
  double worst_jump = 0, worst_velocity_jump = 0;
  for (int k = 1; k < kFrames; ++k) {
    for (double t : {k * kFrame, (k - 1) * kFrame + kActive}) {  // frame start and fly-back start
      Point a = p.at(t - eps), b = p.at(t + eps);
      Point va = p.velocity(t - eps), vb = p.velocity(t + eps);
      worst_jump = std::max({worst_jump, std::fabs(a.x - b.x), std::fabs(a.y - b.y)});
      worst_velocity_jump = std::max({worst_velocity_jump, std::fabs(va.x - vb.x), std::fabs(va.y - vb.y)});
    }
  }
  EXPECT_LT(worst_jump, 1e-5);
  EXPECT_LT(worst_velocity_jump, 1e-3);  // pixels per second; the drift velocity is ~6 px/s
  // The path through the fly-back gap is no wilder than the path itself.
  for (int k = 0; k + 1 < kFrames; ++k) {
    double t = k * kFrame + 0.5 * (kActive + kFrame);
    EXPECT_LT(std::hypot(p.at(t).x - true_path(t).x, p.at(t).y - true_path(t).y), 0.15) << "gap after frame " << k;
  }
}

TEST(DriftPath, ALowWeightOutlierDoesNotBendIt) {
  std::vector<DriftSample> s = band_samples(0.0, 1);
  const double t_out = 5 * kFrame + 0.2;
  Point truth = true_path(t_out);
  DriftPath clean = DriftPath::fit(s, 0.0, kFrames * kFrame, settings_for(kBands));
  s.push_back({t_out, truth.x + 8.0, truth.y - 6.0, 0.01});  // 10 px off, 1% of a band's weight
  DriftPath robust = DriftPath::fit(s, 0.0, kFrames * kFrame, settings_for(kBands));
  double worst = 0;
  for (double t = 0; t <= kFrames * kFrame; t += 1e-3)
    worst = std::max(worst, std::hypot(robust.at(t).x - clean.at(t).x, robust.at(t).y - clean.at(t).y));
  std::printf("drift path: a 10 px outlier of weight 0.01 moves the path by at most %.4f px\n", worst);
  EXPECT_LT(worst, 0.05);
  // The same sample at full weight does move it: the weight is what protects.
  s.back().weight = 1.0;
  DriftPath bent = DriftPath::fit(s, 0.0, kFrames * kFrame, settings_for(kBands));
  EXPECT_GT(std::hypot(bent.at(t_out).x - clean.at(t_out).x, bent.at(t_out).y - clean.at(t_out).y), 1.0);
}

TEST(DriftPath, TheSameWhateverTheOrderOfTheSamples) {
  std::vector<DriftSample> s = band_samples(0.2, 11);
  DriftPath a = DriftPath::fit(s, 0.0, kFrames * kFrame, settings_for(kBands));
  std::mt19937 g(5);
  std::shuffle(s.begin(), s.end(), g);
  DriftPath b = DriftPath::fit(s, 0.0, kFrames * kFrame, settings_for(kBands));
  std::reverse(s.begin(), s.end());
  DriftPath c = DriftPath::fit(s, 0.0, kFrames * kFrame, settings_for(kBands));
  for (double t = -0.3; t <= kFrames * kFrame + 0.3; t += 0.01) {
    EXPECT_EQ(a.at(t).x, b.at(t).x);
    EXPECT_EQ(a.at(t).y, b.at(t).y);
    EXPECT_EQ(a.at(t).x, c.at(t).x);
    EXPECT_EQ(a.at(t).y, c.at(t).y);
  }
}

TEST(DriftPath, ContinuesStraightBeyondItsInterval) {
  DriftPath p = DriftPath::fit(band_samples(0.05, 2), 0.0, kFrames * kFrame, settings_for(kBands));
  const double end = kFrames * kFrame;
  Point e = p.at(end), v = p.velocity(end);
  EXPECT_NEAR(p.at(end + 0.4).x, e.x + 0.4 * v.x, 1e-9);
  EXPECT_NEAR(p.at(end + 0.4).y, e.y + 0.4 * v.y, 1e-9);
  Point b = p.at(0.0), vb = p.velocity(0.0);
  EXPECT_NEAR(p.at(-0.2).x, b.x - 0.2 * vb.x, 1e-9);
  EXPECT_EQ(DriftPath().at(3.0).x, 0.0);  // the default path is no drift
}

TEST(DriftPath, UnfittableInputIsAOneLineError) {
  DriftPathSettings s = settings_for(kBands);
  auto message = [&](std::vector<DriftSample> samples, DriftPathSettings settings, double t1 = 1.0) {
    try {
      DriftPath::fit(std::move(samples), 0.0, t1, settings);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_input);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({{0.5, 1, 1, 1}}, s).find("two or more distinct times"), std::string::npos);
  EXPECT_NE(message({{0.5, 1, 1, 1}, {0.5, 2, 1, 1}}, s).find("two or more distinct times"), std::string::npos);
  EXPECT_NE(message({{0.2, 1, 1, 0}, {0.5, 2, 1, 0}}, s).find("two or more distinct times"), std::string::npos);
  DriftPathSettings zero = s;
  zero.knot_spacing = 0;
  EXPECT_NE(message({{0.2, 1, 1, 1}, {0.5, 2, 1, 1}}, zero).find("knot spacing"), std::string::npos);
  DriftPathSettings stiff = s;
  stiff.smoothing = -1;
  EXPECT_NE(message({{0.2, 1, 1, 1}, {0.5, 2, 1, 1}}, stiff).find("smoothing"), std::string::npos);
  EXPECT_NE(message({{0.2, 1, 1, 1}, {0.5, 2, 1, 1}}, s, 0.0).find("empty"), std::string::npos);
  EXPECT_EQ(message({{0.2, 1, 1, 1}, {0.5, 2, 1, 1}}, s), "");
}

// Cross-validation picks each axis's stiffness from the samples: an axis
// whose samples are noisy (the fast axis, carrying each band's mean jitter)
// gets a stiffer path than a clean one, and each choice is close to the best
// candidate judged against the truth.
TEST(DriftPath, CrossValidationChoosesEachAxisStiffness) {
  std::mt19937 g(7);
  std::normal_distribution<double> noisy(0.0, 0.15), clean(0.0, 0.01);
  std::vector<DriftSample> samples;
  for (int k = 0; k < kFrames; ++k)
    for (int b = 0; b < kBands; ++b) {
      const double t = k * kFrame + (b + 0.5) * kActive / kBands;
      const Point d = true_path(t);
      samples.push_back({t, d.x + noisy(g), d.y + clean(g), 1.0});
    }
  const double knots = choose_knot_spacing(kFrame, kBands), t1 = kFrames * kFrame;
  const std::vector<double> candidates{0.0125, 0.05, 0.2, 0.8, 3.2, 12.8, 51.2};
  const DriftPathSettings chosen = cross_validated_smoothing(samples, 0.0, t1, knots, candidates);
  EXPECT_GT(chosen.smoothing, chosen.smoothing_y);

  auto axis_error = [&](const DriftPath& p, bool x) {
    double sum = 0;
    int n = 0;
    for (double t = 0; t <= t1; t += 1e-3, ++n) {
      const double e = x ? p.at(t).x - true_path(t).x : p.at(t).y - true_path(t).y;
      sum += e * e;
    }
    return std::sqrt(sum / n);
  };
  double best_x = 1e9, best_y = 1e9;
  for (double s : candidates) {
    DriftPathSettings ps;
    ps.knot_spacing = knots;
    ps.smoothing = s;
    const DriftPath p = DriftPath::fit(samples, 0.0, t1, ps);
    best_x = std::min(best_x, axis_error(p, true));
    best_y = std::min(best_y, axis_error(p, false));
  }
  const DriftPath fitted = DriftPath::fit(samples, 0.0, t1, chosen);
  EXPECT_LT(axis_error(fitted, true), 1.25 * best_x);
  EXPECT_LT(axis_error(fitted, false), 1.25 * best_y);

  // The folds follow the sorted samples: the caller's order changes nothing.
  std::vector<DriftSample> shuffled = samples;
  std::shuffle(shuffled.begin(), shuffled.end(), g);
  const DriftPathSettings again = cross_validated_smoothing(shuffled, 0.0, t1, knots, candidates);
  EXPECT_EQ(again.smoothing, chosen.smoothing);
  EXPECT_EQ(again.smoothing_y, chosen.smoothing_y);
}
