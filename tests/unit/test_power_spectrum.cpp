// The power spectrum puts a cosine's energy at its frequency, is centred as
// documented, has the periodogram's scale, and its lattice figure of merit
// prefers an average over a single noisy frame.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "driftscan/core/error.hpp"
#include "driftscan/spectra/power_spectrum.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {
Frame cosine(int w, int h, int kx, int ky, double amplitude, double offset) {
  Frame f(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      f.at(x, y) =
          static_cast<float>(offset + amplitude * std::cos(2 * M_PI * (double(kx) * x / w + double(ky) * y / h)));
  return f;
}
}  // namespace

TEST(PowerSpectrum, CosinePeakAtItsFrequency) {
  const int w = 128, h = 96, kx = 12, ky = -5;
  Frame f = cosine(w, h, kx, ky, 3.0, 10.0);
  for (SpectrumWindow win : {SpectrumWindow::hann, SpectrumWindow::none}) {
    PowerSpectrum ps(w, h, win);
    SpectrumPeak p = ps.strongest_peak(f);
    // either of the two conjugate spots, (w/2 +- kx, h/2 +- ky)
    bool plus = p.x == w / 2 + kx && p.y == h / 2 + ky;
    bool minus = p.x == w / 2 - kx && p.y == h / 2 - ky;
    EXPECT_TRUE(plus || minus) << "peak at " << p.x << "," << p.y;
    EXPECT_NEAR(std::fabs(p.fx), double(kx) / w, 1e-12);
    EXPECT_NEAR(std::fabs(p.fy), 5.0 / h, 1e-12);
    EXPECT_NEAR(p.period, 1.0 / std::hypot(double(kx) / w, 5.0 / h), 1e-9);
    std::vector<double> pw = ps.power(f);
    auto at = [&](int x, int y) { return pw[static_cast<std::size_t>(y) * w + x]; };
    EXPECT_NEAR(at(w / 2 + kx, h / 2 + ky), at(w / 2 - kx, h / 2 - ky), 1e-9 * p.power);
    EXPECT_LT(at(w / 2, h / 2), 1e-9 * p.power);  // the mean is removed
    if (win == SpectrumWindow::none) {
      // periodogram of A cos: (A N / 2)^2 / N at each spot, nothing elsewhere
      double n = double(w) * h;
      EXPECT_NEAR(p.power, 9.0 * n / 4.0, 1e-3 * p.power);
      double elsewhere = 0;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          if (!((x == w / 2 + kx && y == h / 2 + ky) || (x == w / 2 - kx && y == h / 2 - ky)))
            elsewhere = std::max(elsewhere, at(x, y));
      EXPECT_LT(elsewhere, 1e-6 * p.power);
    }
  }
  Frame lp = log_power_spectrum(f);
  EXPECT_EQ(lp.width, w);
  EXPECT_EQ(lp.height, h);
  EXPECT_NEAR(lp.at(w / 2 + kx, h / 2 + ky), std::log1p(PowerSpectrum(w, h).power(f)[(h / 2 + ky) * w + w / 2 + kx]),
              1e-3);
}

TEST(PowerSpectrum, WhiteNoiseFloorIsTheVariance) {
  const int w = 128, h = 128;
  Frame f(w, h);
  std::mt19937 g(3);
  std::normal_distribution<float> noise(5.0f, 2.0f);
  for (float& v : f.pixels) v = noise(g);
  std::vector<double> p = PowerSpectrum(w, h).power(f);
  double mean = 0;
  for (double v : p) mean += v;
  mean /= double(p.size());
  EXPECT_NEAR(mean, 4.0, 0.4);
}

TEST(PowerSpectrum, AverageIsSharperThanAFrame) {
  SynthOptions o;
  o.frames = 16;
  o.width = o.height = 128;
  o.drift_step = 0;
  o.drift_linear_x = o.drift_linear_y = 0;
  o.dose = 3;
  SyntheticSeries s(o);
  Frame avg(128, 128);
  double single_best = 0;
  for (std::size_t k = 0; k < o.frames; ++k) {
    Frame f = s.frame(k);
    single_best = std::max(single_best, lattice_sharpness(f));
    for (std::size_t i = 0; i < f.size(); ++i) avg.pixels[i] += f.pixels[i] / 16.0f;
  }
  double averaged = lattice_sharpness(avg);
  // noise power falls 16x in the average, the lattice spots stay
  EXPECT_GT(averaged, 4.0 * single_best) << "single " << single_best << " average " << averaged;
  SpectrumPeak p = PowerSpectrum(128, 128).strongest_peak(avg);
  // hex lattice of period 9: first-order spots at spacing 9 * sqrt(3) / 2
  EXPECT_NEAR(p.period, 9.0 * std::sqrt(3.0) / 2.0, 0.6);
}

TEST(PowerSpectrum, WrongSizeIsBadInput) {
  PowerSpectrum ps(32, 32);
  EXPECT_THROW(ps.power(Frame(16, 32)), Error);
}
