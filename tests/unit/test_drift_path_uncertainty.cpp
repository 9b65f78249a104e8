// The drift path's standard error (DriftPathUncertainty, lines.csv's
// sigma_dx / sigma_dy): over many noise draws around a known path, the fit's
// part of sigma matches the spread of the fitted path's error relative to its
// mean (the band of M^-1 from the Takahashi recursion, the weights' scale
// from the residuals); sigma does not depend on the weights' scale and grows
// with the samples' noise; the common offset's sigma is that of the mean.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "driftscan/scan_distortion/drift_path.hpp"
#include "driftscan/scan_distortion/white_sample_noise.hpp"

using namespace driftscan;

namespace {

constexpr int kSamples = 96;
constexpr int kGauge = 200;

double truth_x(double t) { return 0.7 * t - 0.3; }
double truth_y(double t) { return 0.2 * std::sin(2.0 * t); }
double gauge_time(std::size_t i) { return (static_cast<double>(i) + 0.5) / kGauge; }

std::vector<DriftSample> draw(std::mt19937& rng, double noise, double weight) {
  std::normal_distribution<double> n(0.0, noise);
  std::vector<DriftSample> s;
  for (int i = 0; i < kSamples; ++i) {
    const double t = (i + 0.5) / kSamples;
    s.push_back({t, truth_x(t) + n(rng), truth_y(t) + n(rng), weight});
  }
  return s;
}

DriftPathSettings settings() {
  DriftPathSettings ps;
  ps.knot_spacing = 0.1;
  ps.smoothing = 1e-4;  // nearly unpenalised: the Bayesian covariance is the sampling one
  return ps;
}

}  // namespace

TEST(DriftPathUncertainty, FitPartMatchesTheSpreadOverNoiseDraws) {
  std::mt19937 rng(5);
  const double noise = 0.1;
  double z2x = 0, z2y = 0, off2x = 0, off_sigma = 0;
  std::size_t n = 0;
  const int draws = 200;
  for (int d = 0; d < draws; ++d) {
    const std::vector<DriftSample> s = draw(rng, noise, 1.0 / (noise * noise));
    const DriftPath path = DriftPath::fit(s, 0.0, 1.0, settings());
    const DriftPathUncertainty u = DriftPathUncertainty::of(s, 0.0, 1.0, settings(), kGauge, gauge_time);
    EXPECT_NEAR(u.scale().x, 1.0, 0.4);  // inverse-variance weights: scale ~1
    double mx = 0, my = 0, tx = 0, ty = 0;
    for (std::size_t i = 0; i < kGauge; ++i) {
      const double t = gauge_time(i);
      mx += path.at(t).x / kGauge, my += path.at(t).y / kGauge;
      tx += truth_x(t) / kGauge, ty += truth_y(t) / kGauge;
    }
    off2x += (mx - tx) * (mx - tx), off_sigma += u.offset_sigma().x / draws;
    for (std::size_t i = 0; i < kGauge; i += 7) {
      const double t = gauge_time(i);
      const Point sig = u.sigma(t), res = u.residual_sigma();
      const double fx = std::sqrt(sig.x * sig.x - res.x * res.x), fy = std::sqrt(sig.y * sig.y - res.y * res.y);
      const double ex = (path.at(t).x - mx) - (truth_x(t) - tx), ey = (path.at(t).y - my) - (truth_y(t) - ty);
      z2x += ex * ex / (fx * fx), z2y += ey * ey / (fy * fy), ++n;
    }
  }
  EXPECT_NEAR(std::sqrt(z2x / n), 1.0, 0.1);
  EXPECT_NEAR(std::sqrt(z2y / n), 1.0, 0.1);
  EXPECT_NEAR(std::sqrt(off2x / draws) / off_sigma, 1.0, 0.15);
}

TEST(DriftPathUncertainty, ScaleOfTheWeightsDoesNotMatterTheNoiseDoes) {
  std::mt19937 a(9), b(9), c(9);
  const DriftPathUncertainty u1 = DriftPathUncertainty::of(draw(a, 0.1, 1.0), 0.0, 1.0, settings(), kGauge, gauge_time);
  const DriftPathUncertainty u2 =
      DriftPathUncertainty::of(draw(b, 0.1, 250.0), 0.0, 1.0, settings(), kGauge, gauge_time);
  const DriftPathUncertainty u3 = DriftPathUncertainty::of(draw(c, 0.2, 1.0), 0.0, 1.0, settings(), kGauge, gauge_time);
  for (double t : {0.05, 0.5, 0.93}) {
    EXPECT_NEAR(u1.sigma(t).x, u2.sigma(t).x, 1e-9 + 1e-6 * u1.sigma(t).x);
    EXPECT_NEAR(u3.sigma(t).x / u1.sigma(t).x, 2.0, 1e-6);  // the same draws doubled (x: a line, fitted exactly)
  }
  EXPECT_GT(u1.sigma(0.5).x, u1.residual_sigma().x);
}

// The white part of a scanned series' band samples, in line times: 24 frames of 8 bands of 16
// lines (2 lines' fly-back between frames), each sample the band's mean drift
// plus white noise of its own sd (weights: 0.37 / sd^2, not inverse
// variances). The drift: 3 px a frame, a 1.5 px wobble over 6 frames and a
// random walk of 0.3 px sd a frame, stepped every line (rougher than any
// band resolves).
namespace {

constexpr int kFrames = 24, kBands = 8, kBandLines = 16, kFrameLines = kBands * kBandLines + 2;

struct ScannedDraw {
  std::vector<double> drift;  // at each line time l + 0.5, l over the whole series
  std::vector<DriftSample> samples;
};

ScannedDraw scanned_draw(std::mt19937& rng, double white_sd) {
  ScannedDraw d;
  std::normal_distribution<double> n(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  const double walk_sd = 0.3 / std::sqrt(static_cast<double>(kFrameLines));
  double walk = 0.0;
  for (int l = 0; l < kFrames * kFrameLines; ++l) {
    const double f = (l + 0.5) / kFrameLines;  // in frame times
    walk += walk_sd * n(rng);
    d.drift.push_back(3.0 * f + 1.5 * std::sin(2.0 * 3.14159265358979 * f / 6.0) + walk);
  }
  for (int k = 0; k < kFrames; ++k)
    for (int b = 0; b < kBands; ++b) {
      const int first = k * kFrameLines + b * kBandLines;
      double mean = 0.0;
      for (int l = first; l < first + kBandLines; ++l) mean += d.drift[static_cast<std::size_t>(l)] / kBandLines;
      const double sd = white_sd * u(rng);
      d.samples.push_back({first + 0.5 * kBandLines, mean + sd * n(rng), mean + sd * n(rng), 0.37 / (sd * sd)});
    }
  return d;
}

}  // namespace

TEST(WhiteSampleNoise, SeparatesTheBandsWhiteNoiseFromTheDrift) {
  std::mt19937 rng(17);
  for (double white : {0.03, 0.1}) {
    double omega = 0.0;
    for (int d = 0; d < 20; ++d) {
      const ScannedDraw s = scanned_draw(rng, white);
      const WhiteSampleNoise w = white_sample_noise(s.samples, 0);
      EXPECT_GT(w.triples, 300u);
      omega += w.scale / 20;
    }
    // Weights 0.37 / sd^2: omega = 0.37 whatever the noise (the walk and the
    // wobble taken for noise would make it larger, the more so at 0.03).
    EXPECT_NEAR(omega, 0.37, 0.37 * 0.2) << "white sd " << white;
  }
  EXPECT_EQ(white_sample_noise({{0.0, 0.0, 0.0, 1.0}, {1.0, 0.0, 0.0, 1.0}}, 0).triples, 0u);  // too few: none
  // Two frames of 8 bands apart in time (frames 0 and 2): 4 triples at lag
  // 3, below the default 8, enough at 4.
  const std::vector<DriftSample> all = scanned_draw(rng, 0.1).samples;
  std::vector<DriftSample> two_frames(all.begin(), all.begin() + kBands);
  two_frames.insert(two_frames.end(), all.begin() + 2L * kBands, all.begin() + 3L * kBands);
  EXPECT_EQ(white_sample_noise(two_frames, 0).triples, 0u);
  EXPECT_EQ(white_sample_noise(two_frames, 0, 4).triples, 24u);  // 12 + 8 + 4
}

// One scan direction, x still (its residual 0, no more than its white
// part: the unresolved drift's estimate clamps at 0), y with the random walk
// of scanned_draw: a clamped estimate is censored, not a measured 0, so x
// takes y's (without it: 0, and so would x's sigma be).
TEST(DriftPathUncertainty, AnAxisClampedAtZeroTakesTheOthersUnresolvedDrift) {
  std::mt19937 rng(23);
  std::vector<DriftSample> s = scanned_draw(rng, 0.03).samples;
  for (DriftSample& d : s) d.dx = 0.0;
  DriftPathSettings ps;
  ps.knot_spacing = 0.25 * kFrameLines;  // as choose_knot_spacing: a quarter frame
  ps.smoothing = 0.8;
  const double end = kFrames * kFrameLines;
  const DriftPathUncertainty u =
      DriftPathUncertainty::of(s, 0.0, end, ps, kGauge, [&](std::size_t i) { return end * gauge_time(i); });
  EXPECT_GT(u.residual_sigma().y, 0.01);
  EXPECT_EQ(u.residual_sigma().x, u.residual_sigma().y);
  EXPECT_NEAR(u.sigma(0.5 * end).x, u.residual_sigma().y, 1e-12);  // its fit part is 0: the drift left alone
}

namespace {

// 24 frames of 8 evenly spaced bands (a fly-back gap between frames); frame
// k's fast axis along x for even k, along y for odd k (turned 90 degrees):
// noise sd `fast` along it, `slow` across it, on the smooth path above.
std::vector<DriftSample> turned_draw(std::mt19937& rng, double fast, double slow) {
  std::normal_distribution<double> nf(0.0, fast), ns(0.0, slow);
  std::vector<DriftSample> s;
  const double frame = 1.0 / 24.0;
  for (int k = 0; k < 24; ++k)
    for (int b = 0; b < 8; ++b) {
      const double t = k * frame + (b + 0.5) * 0.9 * frame / 8.0;
      const double along = nf(rng), across = ns(rng);
      const bool even = k % 2 == 0;
      s.push_back({t, truth_x(t) + (even ? along : across), truth_y(t) + (even ? across : along), 1.0});
    }
  return s;
}

Point turned_fast_axis(double t) {
  const int k = std::clamp(static_cast<int>(std::floor(t * 24.0)), 0, 23);
  return k % 2 == 0 ? Point{1.0, 0.0} : Point{0.0, 1.0};
}

}  // namespace

TEST(DriftPathUncertainty, WhitePartAlongEachFramesOwnAxes) {
  // Frames scanned in two directions: their jitter-like noise lies along x
  // in half of them, along y in the others. The white part estimated along
  // each frame's fast and slow axes leaves little unresolved drift on a
  // smooth path (the residuals are all white; a noisy figure, so the mean of
  // 10 draws against a loose bound; the pooled estimate passes it too on
  // this design); one direction given for every frame is the estimate along
  // x and y (the bookkeeping of the turn).
  std::mt19937 rng(23);
  double unresolved = 0.0;
  for (int d = 0; d < 10; ++d) {
    const std::vector<DriftSample> s = turned_draw(rng, 0.2, 0.05);
    const DriftPathUncertainty u =
        DriftPathUncertainty::of(s, 0.0, 1.0, settings(), kGauge, gauge_time, turned_fast_axis);
    unresolved += (u.residual_sigma().x + u.residual_sigma().y) / 20.0;
    const DriftPathUncertainty plain = DriftPathUncertainty::of(s, 0.0, 1.0, settings(), kGauge, gauge_time);
    const DriftPathUncertainty along_x =
        DriftPathUncertainty::of(s, 0.0, 1.0, settings(), kGauge, gauge_time, [](double) {
          return Point{1.0, 0.0};
        });
    for (double t : {0.1, 0.5, 0.93}) {
      EXPECT_NEAR(plain.sigma(t).x, along_x.sigma(t).x, 1e-12);
      EXPECT_NEAR(plain.sigma(t).y, along_x.sigma(t).y, 1e-12);
    }
  }
  EXPECT_LT(unresolved, 0.25 * 0.2);  // against the fast axis's sd 0.2
}

TEST(DriftPathUncertainty, FitPartFollowsEachFramesDirection) {
  // The same turned frames with knots a quarter frame apart, so the path at a
  // line rests mostly on its own frame's samples: along a frame's fast axis
  // (sd 0.2) the path is four times as uncertain as across it (0.05). One
  // scale per axis pooled the two (z-RMS 1.32 along the fast axes, 0.61
  // across); the sandwich with each sample's variance along its frame's own
  // axes gives each direction its own.
  std::mt19937 rng(31);
  DriftPathSettings ps = settings();
  ps.knot_spacing = 1.0 / 96.0;
  double z2_fast = 0, z2_slow = 0;  // the error along each line's frame's fast axis, and across it
  std::size_t count = 0;
  const int draws = 150;
  for (int d = 0; d < draws; ++d) {
    const std::vector<DriftSample> s = turned_draw(rng, 0.2, 0.05);
    const DriftPath path = DriftPath::fit(s, 0.0, 1.0, ps);
    const DriftPathUncertainty u = DriftPathUncertainty::of(s, 0.0, 1.0, ps, kGauge, gauge_time, turned_fast_axis);
    double mx = 0, my = 0, tx = 0, ty = 0;
    for (std::size_t i = 0; i < kGauge; ++i) {
      const double t = gauge_time(i);
      mx += path.at(t).x / kGauge, my += path.at(t).y / kGauge;
      tx += truth_x(t) / kGauge, ty += truth_y(t) / kGauge;
    }
    for (std::size_t i = 0; i < kGauge; i += 3) {
      const double t = gauge_time(i);
      const Point sig = u.sigma(t), res = u.residual_sigma();
      const double fx = std::sqrt(sig.x * sig.x - res.x * res.x), fy = std::sqrt(sig.y * sig.y - res.y * res.y);
      const double ex = (path.at(t).x - mx) - (truth_x(t) - tx), ey = (path.at(t).y - my) - (truth_y(t) - ty);
      const bool along_x = turned_fast_axis(t).x > 0.5;
      z2_fast += along_x ? ex * ex / (fx * fx) : ey * ey / (fy * fy);
      z2_slow += along_x ? ey * ey / (fy * fy) : ex * ex / (fx * fx);
      ++count;
    }
  }
  EXPECT_NEAR(std::sqrt(z2_fast / static_cast<double>(count)), 1.0, 0.12) << "along the fast axes";
  EXPECT_NEAR(std::sqrt(z2_slow / static_cast<double>(count)), 1.0, 0.12) << "across them";
}

TEST(DriftPathUncertainty, OneDirectionHoldsTheWalkInsideABand) {
  // Band samples that are the means of a random walk over their band (16
  // lines, beta 0.01 px^2 a band along both axes) plus white noise: the lag
  // fit reads beta, and a line's sigma holds beta / 6, its walk about its
  // band's mean, which no band sample shows.
  std::mt19937 rng(41);
  const double beta = 0.01, white = 0.03;
  const int lines = 16, bands = 4000;
  std::normal_distribution<double> step(0.0, std::sqrt(beta / lines)), noise(0.0, white);
  std::vector<DriftSample> s;
  double x = 0.0, y = 0.0;
  for (int b = 0; b < bands; ++b) {
    double mx = 0.0, my = 0.0;
    for (int l = 0; l < lines; ++l) {
      x += step(rng), y += step(rng);
      mx += x / lines, my += y / lines;
    }
    DriftSample d;
    d.t = b + 0.5, d.dx = mx + noise(rng), d.dy = my + noise(rng), d.weight = 1.0;
    s.push_back(d);
  }
  EXPECT_NEAR(white_sample_noise(s, 0).walk, beta, 0.15 * beta);
  EXPECT_NEAR(white_sample_noise(s, 1).walk, beta, 0.15 * beta);
  EXPECT_NEAR(white_sample_noise(s, 0).scale, white * white, 0.15 * white * white);
  // A path with a knot every band follows the samples' walk: the residuals
  // read no drift the path leaves (the estimate clamps at ~0), so what a
  // line's sigma holds beyond the fit is the walk inside its band.
  DriftPathSettings ps;
  ps.knot_spacing = 1.0;
  ps.smoothing = 1e-3;
  const double end = bands;
  const DriftPathUncertainty u = DriftPathUncertainty::of(s, 0.0, end, ps, 1, [](std::size_t) { return 0.0; });
  const double walk = beta / 6.0;
  EXPECT_NEAR(u.residual_sigma().x * u.residual_sigma().x, walk, 0.25 * walk);
  EXPECT_NEAR(u.residual_sigma().y * u.residual_sigma().y, walk, 0.25 * walk);
}

TEST(DriftPathUncertainty, TwoFramesInOneDirectionHoldWhatTheyShare) {
  // Two frames of 8 bands in one direction (a fly-back between them), white
  // noise along the fast axis x (sd 0.1, the lines' jitter) and y (0.02).
  // Given their fast axis (two frames followed, each the other's template),
  // the unresolved drift is one figure for both axes, the larger, and the
  // fast axis's sigma^2 holds the samples' white part along it on top
  // (0.01 px^2 over the draws); the other axis's does not.
  std::mt19937 rng(47);
  std::normal_distribution<double> fast_noise(0.0, 0.1), slow_noise(0.0, 0.02);
  DriftPathSettings ps;
  ps.knot_spacing = 0.25;
  ps.smoothing = 1e-2;
  auto gauge = [](std::size_t i) { return (static_cast<double>(i) + 0.5) / kGauge; };
  const int draws = 400;
  const double end = 2.25;
  double added_x = 0.0, added_y = 0.0;
  for (int d = 0; d < draws; ++d) {
    std::vector<DriftSample> s;
    for (int k = 0; k < 2; ++k)
      for (int b = 0; b < 8; ++b) {
        const double t = 1.25 * k + (b + 0.5) / 8.0;
        s.push_back({t, truth_x(t) + fast_noise(rng), truth_y(t) + slow_noise(rng), 1.0});
      }
    const DriftPathUncertainty none = DriftPathUncertainty::of(s, 0.0, end, ps, kGauge, gauge);
    const DriftPathUncertainty along_x = DriftPathUncertainty::of(s, 0.0, end, ps, kGauge, gauge, {}, Point{1.0, 0.0});
    const DriftPathUncertainty along_y = DriftPathUncertainty::of(s, 0.0, end, ps, kGauge, gauge, {}, Point{0.0, 1.0});
    const double larger = std::max(std::pow(none.residual_sigma().x, 2), std::pow(none.residual_sigma().y, 2));
    EXPECT_NEAR(std::pow(along_x.residual_sigma().y, 2), larger, 1e-12);
    EXPECT_NEAR(std::pow(along_y.residual_sigma().x, 2), larger, 1e-12);
    added_x += (std::pow(along_x.residual_sigma().x, 2) - larger) / draws;
    added_y += (std::pow(along_y.residual_sigma().y, 2) - larger) / draws;
    EXPECT_GE(along_x.sigma(0.5).x, none.sigma(0.5).x);
  }
  EXPECT_NEAR(added_x, 0.01, 0.003);
  EXPECT_NEAR(added_y, 0.0004, 0.0003);  // y's white part
}
