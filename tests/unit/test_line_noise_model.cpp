// The line fits' noise model: a + b v fitted to a frame's residuals, and
// the floor it takes no pixel's variance below: the variance where the
// template's structure starts, read from the frame's template samples by
// brightness.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "driftscan/scan_distortion/line_noise_model.hpp"

using namespace driftscan;

namespace {

// Sums of 1, v, v^2, r^2, v r^2 for pixels of value v under shot noise
// (r^2 = v on average: a = 0, b = 1), and their brightness bins with the
// gradient `gradient(v)`.
template <class Gradient>
void shot_noise_pixels(const std::vector<double>& values, Gradient&& gradient, double sums[5], IntensityBins& bins) {
  for (const double v : values) {
    sums[0] += 1.0, sums[1] += v, sums[2] += v * v, sums[3] += v, sums[4] += v * v;
    bins.add(v, gradient(v));
  }
}

// Pixel values uniform over [lo, hi] (deterministic).
std::vector<double> spread(double lo, double hi, int count) {
  std::vector<double> v(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = lo + (hi - lo) * (i + 0.5) / count;
  return v;
}

// Two populations of pixel values (spread()) and their mean: the bins' level.
std::vector<double> two_populations(double lo1, double hi1, int n1, double lo2, double hi2, int n2, double& mean) {
  std::vector<double> v = spread(lo1, hi1, n1);
  const std::vector<double> more = spread(lo2, hi2, n2);
  v.insert(v.end(), more.begin(), more.end());
  mean = 0.0;
  for (const double x : v) mean += x / static_cast<double>(v.size());
  return v;
}

}  // namespace

TEST(LineNoiseModel, FitsShotNoiseAndFloorsAtTheMeanWithoutBins) {
  const std::vector<double> v = spread(0.5, 3.5, 10000);  // mean 2
  double sums[5] = {};
  IntensityBins bins(2.0);
  shot_noise_pixels(
      v, [](double) { return 1.0; }, sums, bins);
  const LineNoiseModel m = LineNoiseModel::fit(sums);
  EXPECT_NEAR(m.a, 0.0, 1e-9);
  EXPECT_NEAR(m.b, 1.0, 1e-9);
  EXPECT_NEAR(m.floor, 2.0, 1e-9);  // the mean squared residual
  EXPECT_NEAR(m.weight(0.5), 0.5, 1e-9) << "a dark pixel weighs no more than the mean noise's";
  EXPECT_NEAR(m.weight(3.0), 1.0 / 3.0, 1e-9);
}

// Dark structure on a bright background (annular bright field's columns):
// the gradients are as strong in the dark pixels as anywhere, so the dark
// pixels weigh by their shot noise, down to the darkest populated bin.
TEST(LineNoiseModel, DarkStructureWeighsByItsShotNoise) {
  const std::vector<double> v = spread(0.5, 3.5, 10000);
  double sums[5] = {};
  IntensityBins bins(2.0);
  shot_noise_pixels(
      v, [](double) { return 1.0; }, sums, bins);
  const LineNoiseModel m = LineNoiseModel::fit(sums, &bins);
  // The darkest bin, [0.5, 0.75): mean v 0.625.
  EXPECT_NEAR(m.floor, 0.625, 0.01);
  EXPECT_NEAR(m.weight(0.625), 1.0 / 0.625, 0.02);
  EXPECT_NEAR(m.weight(0.7) / m.weight(2.0), 2.0 / 0.7, 1e-9) << "dark pixels weigh by their shot noise";
}

// A lattice bright on a dark background: the dark pixels are flat (their
// template gradient is noise), so they weigh no more than the pixels where
// the structure starts.
TEST(LineNoiseModel, FlatDarkBackgroundWeighsNoMoreThanWhereTheStructureStarts) {
  double mean = 0.0;
  const std::vector<double> v = two_populations(0.1, 0.4, 30000, 0.4, 4.0, 10000, mean);  // background, atoms
  double sums[5] = {};
  IntensityBins bins(mean);
  // Gradient 0.05 in the background, growing with the brightness on the atoms' flanks.
  shot_noise_pixels(
      v, [](double x) { return x < 0.4 ? 0.05 : x; }, sums, bins);
  const LineNoiseModel m = LineNoiseModel::fit(sums, &bins);
  // The mean squared gradient is ~1.5 (the atoms'); half of it is first reached near v = 0.87, above the mean
  // (0.74): the floor stays at the mean noise, not at the background's 0.1-0.4.
  EXPECT_NEAR(m.floor, sums[3] / sums[0], 1e-9);
  EXPECT_NEAR(m.weight(0.2), m.weight(0.3), 1e-12) << "the flat background weighs as one";
}

// The floor stays within a tenth of the mean squared residual and all of it.
TEST(LineNoiseModel, FloorStaysWithinATenthOfTheMeanNoiseAndAllOfIt) {
  // Read noise only (a = 1, b = 0) and structure in the darkest pixels: the
  // linear model's variance there is 1, the mean; with shot noise at a very
  // dark bin the floor would go below a tenth of the mean: held at it.
  {
    const std::vector<double> v = spread(0.0, 4.0, 8000);
    double sums[5] = {};
    IntensityBins bins(2.0);
    for (const double x : v) {
      sums[0] += 1.0, sums[1] += x, sums[2] += x * x, sums[3] += 1.0, sums[4] += x;
      bins.add(x, 1.0);
    }
    const LineNoiseModel m = LineNoiseModel::fit(sums, &bins);
    EXPECT_NEAR(m.floor, 1.0, 1e-9);
  }
  {
    double mean = 0.0;
    const std::vector<double> v = two_populations(0.0, 0.05, 4000, 5.0, 6.0, 4000, mean);  // nearly black, bright
    double sums[5] = {};
    IntensityBins bins(mean);
    shot_noise_pixels(
        v, [](double) { return 1.0; }, sums, bins);
    const LineNoiseModel m = LineNoiseModel::fit(sums, &bins);
    const double mean_r2 = sums[3] / sums[0];
    EXPECT_NEAR(m.floor, 0.1 * mean_r2, 1e-9);
  }
}

// Too few pixels in a bin do not set the floor (200, and 0.5% of the frame's).
TEST(LineNoiseModel, ThinBinsDoNotSetTheFloor) {
  double mean = 0.0;
  const std::vector<double> v = two_populations(0.05, 0.2, 150, 1.5, 2.5, 20000, mean);  // a few dark pixels
  double sums[5] = {};
  IntensityBins bins(mean);
  shot_noise_pixels(
      v, [](double) { return 1.0; }, sums, bins);
  const LineNoiseModel m = LineNoiseModel::fit(sums, &bins);
  EXPECT_GT(m.floor, 1.4) << "the floor came from the 150 dark pixels";
}
