// The averaging's fast warp kernel (CubicWarp) against Keys' kernel sampled
// point by point (sample_cubic, the averaging's warp before it): the same
// samples for translations, axis scales, rotations and shears, at the
// borders, with NaN pixels, over a band of source rows; and averages of a
// drifting series equal to the point-by-point average within 1e-5 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/averaging/cubic_warp.hpp"
#include "driftscan/core/interpolation.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {

// out(p) = f(T^{-1}(p)) the way the averaging warped before CubicWarp.
Frame reference_warp(const Frame& f, const Transform& to_reference) {
  const Transform inv = to_reference.inverse();
  const double eps = 1e-6;
  Frame out(f.width, f.height, std::numeric_limits<float>::quiet_NaN());
  for (int y = 0; y < f.height; ++y)
    for (int x = 0; x < f.width; ++x) {
      Point q = inv.apply(x, y);
      if (q.x < -eps || q.y < -eps || q.x > f.width - 1 + eps || q.y > f.height - 1 + eps) continue;
      out.at(x, y) = sample_cubic(f, std::clamp(q.x, 0.0, f.width - 1.0), std::clamp(q.y, 0.0, f.height - 1.0));
    }
  return out;
}

Frame random_frame(int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(10.f, 100.f);
  Frame f(w, h);
  for (float& v : f.pixels) v = u(rng);
  return f;
}

// Same NaN pattern, finite values within `tol` of the value range.
void expect_same(const Frame& a, const Frame& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  long mismatched_nan = 0, far = 0;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a.pixels[i]) != std::isnan(b.pixels[i])) {
      ++mismatched_nan;
      continue;
    }
    if (std::isnan(a.pixels[i])) continue;
    const double d = std::fabs(a.pixels[i] - b.pixels[i]);
    worst = std::max(worst, d);
    if (d > tol) ++far;
  }
  EXPECT_EQ(mismatched_nan, 0) << what;
  EXPECT_EQ(far, 0) << what << ": worst difference " << worst;
}

Frame fast_warp(const Frame& f, const Transform& t) {
  CubicWarp warp(f.width, f.height);
  CubicWarp::Scratch s = warp.scratch();
  Frame out(f.width, f.height);
  warp.warp(f.pixels.data(), 0, f.height, t, 0, f.height, out.pixels.data(), s);
  return out;
}

}  // namespace

TEST(CubicWarp, SameSamplesAsPointByPointKeys) {
  const Frame f = random_frame(67, 53, 3);
  const Point c{33, 26};
  const Transform cases[] = {
      Transform::translation(3.37, -2.81),        Transform::translation(-0.5, 0.25),
      Transform::translation(4.0, -7.0),           // whole pixels: the slack keeps the border columns
      Transform::translation(-70.2, 1.0),          // no overlap at all
      Transform{1.02, 0.0, 0.0, 0.97, 1.5, -0.7},  // axis scale: separable, per-column weights
      Transform::rigid(0.05, 1.3, -2.2, c),       Transform{1.01, 0.04, -0.03, 0.99, 2.1, 0.4},
  };
  for (const Transform& t : cases) {
    const Frame a = fast_warp(f, t), b = reference_warp(f, t);
    expect_same(a, b, 1e-4 * 100, "transform");  // values up to 100: float against double sums
  }
}

TEST(CubicWarp, NanPixelsSpreadOverTheKernelsSupport) {
  Frame f = random_frame(40, 30, 5);
  f.at(12, 9) = std::numeric_limits<float>::quiet_NaN();
  f.at(0, 29) = std::numeric_limits<float>::infinity();
  for (const Transform& t : {Transform::translation(1.3, 0.6), Transform::rigid(0.1, 0.5, 0.5, {20, 15})}) {
    const Frame a = fast_warp(f, t), b = reference_warp(f, t);
    expect_same(a, b, 1e-2, "with NaN/Inf pixels");
    long nan = 0;
    for (float v : a.pixels) nan += std::isnan(v) ? 1 : 0;
    EXPECT_GT(nan, 0);
  }
}

TEST(CubicWarp, ABandOfSourceRowsIsEnough) {
  const Frame f = random_frame(48, 64, 9);
  CubicWarp warp(f.width, f.height);
  CubicWarp::Scratch s = warp.scratch();
  for (const Transform& t : {Transform::translation(2.4, -5.6), Transform::rigid(-0.08, -1.0, 3.0, {24, 32}),
                             Transform::translation(0.0, 40.0)}) {
    const Frame whole = fast_warp(f, t);
    for (int y0 = 0; y0 < f.height; y0 += 13) {
      const int y1 = std::min(f.height, y0 + 13);
      int first = 0, last = 0;
      warp.source_rows(t, y0, y1, first, last);
      ASSERT_LT(first, last);
      // Only the named rows, copied out: any other row read would be garbage.
      std::vector<float> band(f.pixels.begin() + static_cast<long>(first) * f.width,
                              f.pixels.begin() + static_cast<long>(last) * f.width);
      std::vector<float> out(static_cast<std::size_t>(y1 - y0) * f.width);
      warp.warp(band.data(), first, last - first, t, y0, y1, out.data(), s);
      for (int y = y0; y < y1; ++y)
        for (int x = 0; x < f.width; ++x) {
          const float a = out[static_cast<std::size_t>(y - y0) * f.width + x], b = whole.at(x, y);
          ASSERT_TRUE((std::isnan(a) && std::isnan(b)) || a == b) << "band " << y0 << " pixel " << x << "," << y;
        }
    }
  }
}

TEST(CubicWarp, AveragesEqualThePointByPointWarpWithin1e5) {
  SynthOptions o;
  o.frames = 24;
  o.width = o.height = 80;
  o.period = 9;
  o.dose = 6;
  o.drift_step = 0.4;
  o.drift_linear_x = 0.3;
  o.drift_linear_y = -0.2;
  SyntheticSeries series(o);
  FrameVector frames;
  std::vector<Transform> truth;
  for (std::size_t k = 0; k < o.frames; ++k) frames.push_back(series.frame(k)), truth.push_back(series.truth(k));
  // Rotated copies too: the affine path.
  for (int rotated = 0; rotated < 2; ++rotated) {
    std::vector<Transform> t = truth;
    if (rotated)
      for (std::size_t k = 0; k < t.size(); ++k)
        t[k] = compose(t[k], Transform::rigid(0.002 * double(k), 0, 0, {40, 40}));
    AveragingOptions opt;
    const AverageResult r = average_series(frames, t, opt);
    // The reference mean: every frame warped point by point, NaN skipped.
    std::vector<double> sum(r.average.size(), 0.0), count(r.average.size(), 0.0);
    for (std::size_t k = 0; k < t.size(); ++k) {
      const Frame wk = reference_warp(frames.frames()[k], t[k]);
      for (std::size_t i = 0; i < wk.size(); ++i)
        if (std::isfinite(wk.pixels[i])) sum[i] += wk.pixels[i], count[i] += 1;
    }
    double worst = 0;
    for (std::size_t i = 0; i < sum.size(); ++i) {
      ASSERT_EQ(static_cast<float>(count[i]), r.coverage.pixels[i]) << "pixel " << i;
      if (count[i] == 0) continue;
      const double ref = sum[i] / count[i];
      worst = std::max(worst, std::fabs(r.average.pixels[i] - ref) / std::max(std::fabs(ref), 1e-3));
    }
    EXPECT_LT(worst, 1e-5) << (rotated ? "rigid" : "translation");
  }
}
