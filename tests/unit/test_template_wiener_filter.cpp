// The template's Wiener filter (template_wiener_filter.hpp): it must take the
// noise out of an average of a lattice, leave a noise-free average alone,
// keep little of an average that is all noise, and treat broadband content
// by how far it stands above the noise.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "driftscan/core/cubic_bspline.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/scan_distortion/template_wiener_filter.hpp"

using namespace driftscan;

namespace {

// A hexagonal lattice of Gaussian atoms, period 9 px, on an awkward size.
Frame lattice(int w, int h) {
  Frame f(w, h, 1.0f);
  const double a = 9.0, r = a * std::sqrt(3.0) / 2;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double v = 0;
      for (int j = -1; j <= static_cast<int>(h / r) + 1; ++j)
        for (int i = -1; i <= static_cast<int>(w / a) + 1; ++i) {
          const double cx = i * a + (j % 2 ? a / 2 : 0), cy = j * r;
          const double d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
          if (d2 < 36) v += std::exp(-d2 / (2 * 1.5 * 1.5));
        }
      f.at(x, y) += static_cast<float>(4 * v);
    }
  return f;
}

struct Halves {
  Frame average, half_difference;
};

// The averages of 12 even and 12 odd frames of `clean` with white noise of
// `sigma` per frame.
Halves noisy_halves(const Frame& clean, double sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma / std::sqrt(12.0));
  Halves h{clean, clean};
  for (std::size_t i = 0; i < clean.pixels.size(); ++i) {
    const double even = clean.pixels[i] + noise(rng), odd = clean.pixels[i] + noise(rng);
    h.average.pixels[i] = static_cast<float>(0.5 * (even + odd));
    h.half_difference.pixels[i] = static_cast<float>(even - odd);
  }
  return h;
}

double rms_difference(const Frame& a, const Frame& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) s += std::pow(a.pixels[i] - b.pixels[i], 2);
  return std::sqrt(s / static_cast<double>(a.pixels.size()));
}

}  // namespace

TEST(TemplateWienerFilter, TakesTheNoiseOutOfALatticeAverage) {
  const Frame clean = lattice(131, 97);  // 131 is prime: the transform is padded
  const Halves h = noisy_halves(clean, 2.0, 1);
  const TemplateWienerFilter filter(h.average, h.half_difference, 12, 12);
  Frame filtered = h.average;
  filter.apply(filtered);
  const double before = rms_difference(h.average, clean), after = rms_difference(filtered, clean);
  std::printf("lattice average, noise RMS %.4f -> %.4f after the filter (kept power %.3f)\n", before, after,
              filter.kept_power());
  EXPECT_LT(after, 0.5 * before);
  EXPECT_GT(filter.transform_width(), 131);
}

TEST(TemplateWienerFilter, LeavesANoiseFreeAverageAlone) {
  const Frame clean = lattice(64, 60);
  const Frame zero(64, 60, 0.0f);
  const TemplateWienerFilter filter(clean, zero, 5, 4);
  Frame filtered = clean;
  filter.apply(filtered);
  EXPECT_LT(rms_difference(filtered, clean), 1e-4);
  EXPECT_NEAR(filter.kept_power(), 1.0, 1e-6);
}

TEST(TemplateWienerFilter, KeepsLittleOfAnAverageThatIsAllNoise) {
  const Frame flat(80, 72, 3.0f);
  const Halves h = noisy_halves(flat, 2.0, 2);
  const TemplateWienerFilter filter(h.average, h.half_difference, 12, 12);
  Frame filtered = h.average;
  filter.apply(filtered);
  EXPECT_LT(filter.kept_power(), 0.1);
  EXPECT_LT(rms_difference(filtered, flat), 0.4 * rms_difference(h.average, flat));
}

TEST(TemplateWienerFilter, BroadbandContentKeepsWhatStandsAboveTheNoise) {
  // Smooth random content (strong at low frequencies, weak at high): the
  // gain falls with frequency, from ~1 near the centre to ~0 at the corner.
  const int w = 96, hgt = 96;
  std::mt19937 rng(3);
  std::normal_distribution<double> n01(0.0, 1.0);
  Frame content(w, hgt, 0.0f);
  for (int k = 0; k < 40; ++k) {
    const double fx = 0.02 * n01(rng), fy = 0.02 * n01(rng), ph = 6.28 * n01(rng);
    for (int y = 0; y < hgt; ++y)
      for (int x = 0; x < w; ++x) content.at(x, y) += static_cast<float>(std::cos(6.2832 * (fx * x + fy * y) + ph));
  }
  const Halves h = noisy_halves(content, 2.0, 4);
  const TemplateWienerFilter filter(h.average, h.half_difference, 12, 12);
  // Mean gains: below 0.05 cycles/px (where the content is) and above 0.3.
  double low = 0, low_n = 0, high = 0, high_n = 0;
  const int tw = filter.transform_width(), th = filter.transform_height();
  for (int v = 0; v < th; ++v)
    for (int u = 0; u <= tw / 2; ++u) {
      const double fx = static_cast<double>(u) / tw, fy = static_cast<double>(v <= th / 2 ? v : th - v) / th;
      const double f = std::hypot(fx, fy);
      if (f > 0 && f < 0.05) low += filter.gain(u, v), low_n += 1;
      if (f > 0.3) high += filter.gain(u, v), high_n += 1;
    }
  std::printf("broadband content: mean gain %.3f below 0.05 cycles/px, %.3f above 0.3\n", low / low_n, high / high_n);
  EXPECT_GT(low / low_n, 0.8);
  EXPECT_LT(high / high_n, 0.2);
  Frame filtered = h.average;
  filter.apply(filtered);
  EXPECT_LT(rms_difference(filtered, content), rms_difference(h.average, content));
}

TEST(TemplateWienerFilter, ContentAsStrongAsTheNoiseKeepsHalfOfIt) {
  // White content with the power of the average's noise at every frequency:
  // the Wiener gain is 1/2 throughout. Estimated from the average's power at
  // each frequency (which scatters like an exponential variable) the gain
  // 1 - N/P is low on average unless that power is averaged over enough
  // frequencies (a 3 x 3 window alone: a mean gain of 0.45 here).
  const int w = 128, hgt = 120;
  std::mt19937 rng(5);
  const double sigma = 2.0;  // per frame: the average of 24 has sigma^2 / 24
  std::normal_distribution<double> content_noise(0.0, sigma / std::sqrt(24.0));
  Frame content(w, hgt, 0.0f);
  for (float& v : content.pixels) v = static_cast<float>(content_noise(rng));
  const Halves h = noisy_halves(content, sigma, 6);
  const TemplateWienerFilter filter(h.average, h.half_difference, 12, 12);
  double sum = 0, n = 0;
  const int tw = filter.transform_width(), th = filter.transform_height();
  for (int v = 0; v < th; ++v)
    for (int u = 0; u <= tw / 2; ++u) {
      const double fx = static_cast<double>(u) / tw, fy = static_cast<double>(v <= th / 2 ? v : th - v) / th;
      // Inside the band where the Tukey window's edges leave the content white.
      if (std::hypot(fx, fy) > 0.02 && std::max(fx, fy) < 0.45) sum += filter.gain(u, v), n += 1;
    }
  std::printf("white content at the noise's power: mean gain %.3f (Wiener 0.5)\n", sum / n);
  EXPECT_NEAR(sum / n, 0.5, 0.04);
}

TEST(TemplateWienerFilter, SizesThatDifferAreAnError) {
  const Frame a(40, 30, 1.0f), b(41, 30, 0.0f);
  EXPECT_THROW(TemplateWienerFilter(a, b, 3, 3), Error);
  EXPECT_THROW(TemplateWienerFilter(a, Frame(40, 30, 0.0f), 3, 0), Error);
  const TemplateWienerFilter f(a, Frame(40, 30, 0.0f), 3, 3);
  Frame other(30, 40, 1.0f);
  EXPECT_THROW(f.apply(other), Error);
}

TEST(TemplateWienerFilter, CoefficientsOfADifferenceAddToTheWholeAveragesAwayFromTheEdges) {
  // A leave-one-out template: the whole average's coefficients plus those of
  // its difference from it must be the coefficients of the leave-one-out
  // image, filtered and prefiltered (both linear); the difference's
  // prefilter is periodic, so within a few px of the edges they may differ.
  const Frame clean = lattice(131, 97);
  const Halves h = noisy_halves(clean, 2.0, 5);
  const TemplateWienerFilter filter(h.average, h.half_difference, 12, 12);
  std::mt19937 rng(6);
  std::normal_distribution<double> noise(0.0, 0.3);
  Frame difference(131, 97, 0.0f), image = h.average;
  for (std::size_t i = 0; i < image.pixels.size(); ++i) {
    difference.pixels[i] = static_cast<float>(noise(rng) + 0.2);  // a mean of its own, too
    image.pixels[i] += difference.pixels[i];
  }
  Frame exact = image;
  filter.apply(exact);
  bspline_prefilter(exact);
  Frame whole = h.average;
  filter.apply(whole);
  bspline_prefilter(whole);
  filter.add_filtered_coefficients(difference, whole);
  double inside = 0.0, scale = 0.0;
  for (int y = 12; y < 97 - 12; ++y)
    for (int x = 12; x < 131 - 12; ++x) {
      inside = std::max(inside, static_cast<double>(std::fabs(difference.at(x, y) - exact.at(x, y))));
      scale = std::max(scale, static_cast<double>(std::fabs(exact.at(x, y) - whole.at(x, y))));
    }
  std::printf("coefficients by difference: largest error %.2e inside 12 px of the edges (the difference's own %.3f)\n",
              inside, scale);
  EXPECT_GT(scale, 0.05);  // the difference did change the coefficients
  EXPECT_LT(inside, 1e-4 * scale);
  Frame wrong(130, 97, 0.0f);
  EXPECT_THROW(filter.add_filtered_coefficients(wrong, whole), Error);
}

TEST(TemplateWienerFilter, ASmallerNoiseScaleKeepsMoreOfTheAverage) {
  // The gain is max(0, P - scale N) / P: with the noise counted at half its
  // power, every frequency keeps at least as much (strictly more where the
  // Wiener gain was between 0 and 1), and scale 1 is the default filter.
  const Frame clean = lattice(96, 90);
  const Halves h = noisy_halves(clean, 2.0, 7);
  const TemplateWienerFilter wiener(h.average, h.half_difference, 12, 12);
  const TemplateWienerFilter one(h.average, h.half_difference, 12, 12, 1.0);
  const TemplateWienerFilter half(h.average, h.half_difference, 12, 12, 0.5);
  int raised = 0, lowered = 0, differ_from_default = 0;
  for (int v = 0; v < wiener.transform_height(); ++v)
    for (int u = 0; u <= wiener.transform_width() / 2; ++u) {
      const float g = wiener.gain(u, v), g_half = half.gain(u, v);
      differ_from_default += one.gain(u, v) != g;
      if (g > 0.05f && g < 0.95f) raised += g_half > g + 1e-6f;
      lowered += g_half < g - 1e-6f;
    }
  std::printf("noise scale 0.5: %d frequencies' gain raised, %d lowered; kept power %.3f -> %.3f\n", raised, lowered,
              wiener.kept_power(), half.kept_power());
  EXPECT_EQ(differ_from_default, 0);
  EXPECT_EQ(lowered, 0);
  EXPECT_GT(raised, 100);
  EXPECT_GT(half.kept_power(), wiener.kept_power());
  EXPECT_THROW(TemplateWienerFilter(h.average, h.half_difference, 12, 12, 0.0), Error);
  EXPECT_THROW(TemplateWienerFilter(h.average, h.half_difference, 12, 12, std::nan("")), Error);
}
