// The float 4x4 spline taps (bspline_taps.hpp, SSE2 on x86-64) against the
// double reference sample_bspline() and its weights' derivatives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "driftscan/core/bspline_taps.hpp"
#include "driftscan/core/cubic_bspline.hpp"

using namespace driftscan;

namespace {
Frame random_coefficients(int w, int h) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-50.0f, 150.0f);
  Frame f(w, h);
  for (float& v : f.pixels) v = u(rng);
  bspline_prefilter(f);
  return f;
}
}  // namespace

TEST(BsplineTaps, ValueEqualsTheDoubleReference) {
  const Frame c = random_coefficients(37, 29);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> ux(1.0, 33.999), uy(1.0, 25.999);
  for (int n = 0; n < 2000; ++n) {
    const double x = ux(rng), y = uy(rng);
    const int ix = static_cast<int>(x), iy = static_cast<int>(y);
    const float v = bspline_taps_value(c.row(iy - 1) + ix - 1, static_cast<std::size_t>(c.width),
                                       static_cast<float>(x - ix), static_cast<float>(y - iy));
    ASSERT_NEAR(v, sample_bspline(c, x, y), 2e-4) << "at " << x << ", " << y;
  }
}

TEST(BsplineTaps, GradientIsTheDerivativeOfTheValue) {
  const Frame c = random_coefficients(40, 33);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> ux(2.0, 36.0), uy(2.0, 29.0);
  for (int n = 0; n < 500; ++n) {
    const double x = ux(rng), y = uy(rng);
    const int ix = static_cast<int>(x), iy = static_cast<int>(y);
    float v, gx, gy;
    bspline_taps_gradient(c.row(iy - 1) + ix - 1, static_cast<std::size_t>(c.width), static_cast<float>(x - ix),
                          static_cast<float>(y - iy), v, gx, gy);
    ASSERT_NEAR(v, sample_bspline(c, x, y), 2e-4);
    // The derivative in double from the reference weights.
    double wx[4], wy[4], dwx[4], dwy[4], dx = 0, dy = 0;
    bspline_weights(x - ix, wx);
    bspline_weights(y - iy, wy);
    bspline_weight_derivatives(x - ix, dwx);
    bspline_weight_derivatives(y - iy, dwy);
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        const double cij = c.at(ix - 1 + i, iy - 1 + j);
        dx += wy[j] * dwx[i] * cij, dy += dwy[j] * wx[i] * cij;
      }
    // And a central difference of the value, a check on the reference.
    const double h = 1e-3;
    const double fd = (static_cast<double>(sample_bspline(c, x + h, y)) - sample_bspline(c, x - h, y)) / (2 * h);
    ASSERT_NEAR(dx, fd, 0.05 * (1.0 + std::fabs(dx)));
    ASSERT_NEAR(gx, dx, 1e-4 * (1.0 + std::fabs(dx))) << "at " << x << ", " << y;
    ASSERT_NEAR(gy, dy, 1e-4 * (1.0 + std::fabs(dy))) << "at " << x << ", " << y;
  }
}

TEST(BsplineTaps, AtWholePixelsTheSplineInterpolatesTheSamples) {
  Frame samples(16, 12);
  for (int y = 0; y < samples.height; ++y)
    for (int x = 0; x < samples.width; ++x)
      samples.at(x, y) = static_cast<float>(std::sin(0.7 * x) * std::cos(0.4 * y));
  Frame c = samples;
  bspline_prefilter(c);
  for (int y = 1; y + 2 < c.height; ++y)
    for (int x = 1; x + 2 < c.width; ++x)
      ASSERT_NEAR(bspline_taps_value(c.row(y - 1) + x - 1, static_cast<std::size_t>(c.width), 0.0f, 0.0f),
                  samples.at(x, y), 1e-5);
}

#if defined(DRIFTSCAN_FMA_TAPS)
// The AVX2 + FMA build of the taps (run only where the CPU has them) against
// the double reference and the SSE2 build: within float rounding, both the
// value and the gradient.
TEST(BsplineTaps, FmaBuildAgreesWithTheReferenceAndTheSse2Build) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  const Frame c = random_coefficients(41, 35);
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> ux(1.0, 37.999), uy(1.0, 31.999);
  double largest = 0.0;
  for (int n = 0; n < 3000; ++n) {
    const double x = ux(rng), y = uy(rng);
    const int ix = static_cast<int>(x), iy = static_cast<int>(y);
    const float* p = c.row(iy - 1) + ix - 1;
    const auto stride = static_cast<std::size_t>(c.width);
    const float fx = static_cast<float>(x - ix), fy = static_cast<float>(y - iy);
    float v, gx, gy, v2, gx2, gy2;
    bspline_taps_gradient(p, stride, fx, fy, v, gx, gy);
    bspline_taps_gradient_fma(p, stride, fx, fy, v2, gx2, gy2);
    const float value = bspline_taps_value_fma(p, stride, fx, fy);
    ASSERT_NEAR(value, sample_bspline(c, x, y), 2e-4) << "at " << x << ", " << y;
    ASSERT_NEAR(v2, v, 1e-4f * (1.0f + std::fabs(v)));
    ASSERT_NEAR(gx2, gx, 1e-4f * (1.0f + std::fabs(gx))) << "at " << x << ", " << y;
    ASSERT_NEAR(gy2, gy, 1e-4f * (1.0f + std::fabs(gy))) << "at " << x << ", " << y;
    largest = std::max(largest, static_cast<double>(std::fabs(gy2 - gy)));
  }
  EXPECT_GT(largest, 0.0);  // the build fused its multiply-adds (else it is the SSE2 one)
}
#endif
