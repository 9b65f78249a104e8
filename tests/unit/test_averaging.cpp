// Averaging in frame 0's coordinates: the convention of the warp, coverage at
// the borders, convergence to the clean frame, robust methods against an
// outlier frame, missing data, and agreement of Fourier and cubic warps.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "driftscan/averaging/averaging.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/spectra/power_spectrum.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {

std::vector<Transform> truths(const SyntheticSeries& s) {
  std::vector<Transform> t;
  for (std::size_t k = 0; k < s.frame_count(); ++k) t.push_back(s.truth(k));
  return t;
}

// The first `n` frames of a series as a source.
FrameVector first_frames(const SyntheticSeries& s, std::size_t n) {
  FrameVector v;
  for (std::size_t k = 0; k < n; ++k) v.push_back(s.frame(k));
  return v;
}

bool all_finite(const Frame& f) {
  for (float v : f.pixels)
    if (!std::isfinite(v)) return false;
  return true;
}

SynthOptions lattice_series(std::size_t frames) {
  SynthOptions o;
  o.frames = frames;
  o.width = o.height = 96;
  o.period = 9;
  o.atom_sigma = 1.5;  // smooth enough that the cubic warp's own error is small
  o.drift_step = 0.4;
  o.drift_linear_x = 0.07;
  o.drift_linear_y = -0.05;
  o.dose = 6;
  o.seed = 5;
  return o;
}

double rms_where(const Frame& a, const Frame& b, const Frame& coverage, float min_cover, int margin) {
  double ss = 0;
  long n = 0;
  for (int y = margin; y < a.height - margin; ++y)
    for (int x = margin; x < a.width - margin; ++x)
      if (coverage.at(x, y) >= min_cover) {
        double d = a.at(x, y) - b.at(x, y);
        ss += d * d, ++n;
      }
  return n ? std::sqrt(ss / n) : std::numeric_limits<double>::infinity();
}

}  // namespace

TEST(Averaging, WarpFollowsTheConventionAndCoverageCountsBorders) {
  // f_k(p) = g(T_k(p)) with g linear (which the cubic kernel reproduces):
  // warping with T_k must give back g in frame 0's grid.
  const int w = 40, h = 30;
  auto g = [](double x, double y) { return 3.0 + 0.5 * x - 0.25 * y; };
  std::vector<Transform> t = {Transform::identity(), Transform::translation(1.5, 0), Transform::translation(-2, 1),
                              Transform::translation(3, -2.5)};
  FrameVector frames;
  for (const Transform& tk : t) {
    Frame f(w, h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        Point q = tk.apply(x, y);
        f.at(x, y) = static_cast<float>(g(q.x, q.y));
      }
    frames.push_back(f);
  }
  AverageResult r = average_series(frames, t, {});
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      int expected = 0;
      for (const Transform& tk : t) {
        Point q = tk.inverse().apply(x, y);  // where frame k saw frame 0's pixel
        expected += (q.x >= 0 && q.x <= w - 1 && q.y >= 0 && q.y <= h - 1) ? 1 : 0;
      }
      ASSERT_EQ(r.coverage.at(x, y), float(expected)) << x << "," << y;
      if (x >= 5 && x < w - 5 && y >= 5 && y < h - 5) {
        EXPECT_NEAR(r.average.at(x, y), g(x, y), 1e-4) << x << "," << y;
      }
      if (expected == 0) {
        EXPECT_EQ(r.average.at(x, y), 0.0f);
      }
    }
  EXPECT_EQ(r.coverage.at(0, 0), 1.0f);  // only frame 0 reaches this corner
  EXPECT_EQ(r.coverage.at(20, 15), 4.0f);
  EXPECT_TRUE(all_finite(r.average));
  ASSERT_EQ(r.quality.size(), 4u);
  for (bool u : r.used) EXPECT_TRUE(u);
}

TEST(Averaging, ApproachesTheCleanFrameLikeOneOverSqrtN) {
  SynthOptions o = lattice_series(64);
  SyntheticSeries s(o);
  Frame clean = s.ideal_frame(0);
  std::vector<Transform> all = truths(s);
  FrameVector frames = first_frames(s, 64);
  double err[3];
  std::size_t ns[3] = {4, 16, 64};
  for (int i = 0; i < 3; ++i) {
    FrameVector sub;
    for (std::size_t k = 0; k < ns[i]; ++k) sub.push_back(frames.frames()[k]);
    AverageResult r = average_series(sub, std::vector<Transform>(all.begin(), all.begin() + ns[i]), {});
    err[i] = rms_where(r.average, clean, r.coverage, float(ns[i]), 2);
  }
  // 4x more frames: half the error (Poisson noise dominates the warp's error)
  std::printf("RMS error vs the clean frame: N=4 %.4f, N=16 %.4f, N=64 %.4f\n", err[0], err[1], err[2]);
  EXPECT_NEAR(err[1] / err[0], 0.5, 0.1) << err[0] << " " << err[1] << " " << err[2];
  EXPECT_NEAR(err[2] / err[1], 0.5, 0.1) << err[0] << " " << err[1] << " " << err[2];
  // and it is the true transforms that make it work: identity transforms blur
  AverageResult wrong = average_series(frames, std::vector<Transform>(64, Transform::identity()), {});
  EXPECT_GT(rms_where(wrong.average, clean, wrong.coverage, 64, 2), 3 * err[2]);
  // the average's lattice is sharper than a single frame's
  AverageResult r = average_series(frames, all, {});
  EXPECT_GT(lattice_sharpness(r.average), 5 * lattice_sharpness(frames.frames()[0]));
}

TEST(Averaging, MedianAndClippedRejectAnOutlierFrame) {
  SynthOptions o = lattice_series(16);
  o.drift_step = 0.3;
  SyntheticSeries s(o);
  FrameVector frames;
  for (std::size_t k = 0; k < 16; ++k) {
    Frame f = s.frame(k);
    if (k == 9)
      for (float& v : f.pixels) v += 500.0f;  // a flash: still lattice-shaped, so NCC keeps it
    frames.push_back(f);
  }
  std::vector<Transform> t = truths(s);
  FrameVector good;
  std::vector<Transform> tg;
  for (std::size_t k = 0; k < 16; ++k)
    if (k != 9) good.push_back(frames.frames()[k]), tg.push_back(t[k]);
  AverageResult mean_good = average_series(good, tg, {});

  AveragingOptions opt;
  AverageResult mean = average_series(frames, t, opt);
  opt.method = AverageMethod::clipped;
  AverageResult clipped = average_series(frames, t, opt);
  opt.method = AverageMethod::median;
  AverageResult median = average_series(frames, t, opt);

  Frame clean = s.ideal_frame(0);
  double e_mean = rms_where(mean.average, clean, mean.coverage, 16, 2);
  double e_median = rms_where(median.average, clean, median.coverage, 16, 2);
  double e_clipped = rms_where(clipped.average, mean_good.average, clipped.coverage, 15, 2);
  EXPECT_GT(e_mean, 25.0);     // the flash shifts the mean by ~500/16
  EXPECT_LT(e_median, 2.0);    // the median ignores it (noise ~ sqrt(6))
  EXPECT_LT(e_clipped, 1e-3);  // the clipped mean is the mean of the other 15
  EXPECT_LT(rms_where(clipped.average, clean, clipped.coverage, 15, 2), 2.0);
  EXPECT_TRUE(all_finite(median.average) && all_finite(clipped.average));
  // the clipped coverage counts the kept samples: 15 inside the full overlap
  EXPECT_EQ(clipped.coverage.at(48, 48), 15.0f);
  EXPECT_EQ(median.coverage.at(48, 48), 16.0f);
}

TEST(Averaging, MedianBandsGiveTheSameResultAsOneBand) {
  SynthOptions o = lattice_series(9);
  o.width = o.height = 48;
  SyntheticSeries s(o);
  FrameVector frames = first_frames(s, 9);
  AveragingOptions opt;
  opt.method = AverageMethod::median;
  AverageResult whole = average_series(frames, truths(s), opt);
  opt.median_tile = 1;  // bands of one row: 48 passes over the 9 frames
  AverageResult rows = average_series(frames, truths(s), opt);
  EXPECT_EQ(whole.average.pixels, rows.average.pixels);
  EXPECT_EQ(whole.coverage.pixels, rows.coverage.pixels);
}

TEST(Averaging, NanAndBlankFramesAreMissingNotPoison) {
  SynthOptions o = lattice_series(8);
  o.drift_step = 0;
  o.drift_linear_x = o.drift_linear_y = 0;
  SyntheticSeries s(o);
  FrameVector frames;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t k = 0; k < 8; ++k) {
    Frame f = s.frame(k);
    if (k == 3) {
      for (int y = 20; y < 30; ++y)
        for (int x = 40; x < 60; ++x) f.at(x, y) = nan;
      f.at(5, 70) = std::numeric_limits<float>::infinity();
    }
    if (k == 5) f = Frame(96, 96, nan);
    if (k == 6) f = Frame(96, 96, 7.0f);
    frames.push_back(f);
  }
  std::vector<Transform> t(8, Transform::identity());
  t[1] = Transform::translation(500, 0);  // registered far outside frame 0
  for (AverageMethod m : {AverageMethod::mean, AverageMethod::median, AverageMethod::clipped}) {
    for (Interpolation interp : {Interpolation::cubic, Interpolation::fourier}) {
      AveragingOptions opt;
      opt.method = m;
      opt.interpolation = interp;
      AverageResult r = average_series(frames, t, opt);
      ASSERT_TRUE(all_finite(r.average));
      ASSERT_TRUE(all_finite(r.coverage));
      EXPECT_FALSE(r.used[1]);
      EXPECT_FALSE(r.used[5]);
      EXPECT_FALSE(r.used[6]);
      EXPECT_TRUE(r.used[3]);
      EXPECT_EQ(r.coverage.at(10, 10), 5.0f);
      EXPECT_EQ(r.coverage.at(50, 25), 4.0f);  // frame 3 is missing there
      EXPECT_EQ(r.coverage.at(5, 70), 4.0f);
      if (m == AverageMethod::mean) {
        double expect = 0;
        for (std::size_t k : {0, 2, 4, 7}) expect += frames.frames()[k].at(50, 25);
        EXPECT_NEAR(r.average.at(50, 25), expect / 4, 1e-4);
      }
      std::string all;
      for (const auto& w : r.warnings) all += w + "\n";
      EXPECT_NE(all.find("frame 3: 201 NaN/Inf"), std::string::npos) << all;
      EXPECT_NE(all.find("frame 5 has no finite pixel"), std::string::npos) << all;
      EXPECT_NE(all.find("frame 6 is blank"), std::string::npos) << all;
      EXPECT_NE(all.find("frame 1 does not overlap frame 0"), std::string::npos) << all;
    }
  }
  // nothing left to average: a clear error, not an empty image
  FrameVector bad;
  bad.push_back(Frame(8, 8, nan));
  bad.push_back(Frame(8, 8, 1.0f));
  EXPECT_THROW(average_series(bad, {Transform::identity(), Transform::identity()}, {}), Error);
}

TEST(Averaging, FourierAndCubicAgree) {
  SynthOptions o = lattice_series(12);
  o.dose = 0;  // noise-free, so differences are the interpolators'
  SyntheticSeries s(o);
  FrameVector frames = first_frames(s, 12);
  AveragingOptions opt;
  AverageResult cubic = average_series(frames, truths(s), opt);
  opt.interpolation = Interpolation::fourier;
  AverageResult fourier = average_series(frames, truths(s), opt);
  EXPECT_EQ(cubic.coverage.pixels, fourier.coverage.pixels);
  Frame clean = s.ideal_frame(0);
  double peak = *std::max_element(clean.pixels.begin(), clean.pixels.end());
  // away from the borders, where the circular shift's wrap-around rings
  double diff = rms_where(cubic.average, fourier.average, cubic.coverage, 12, 10);
  EXPECT_LT(diff, 0.01 * peak);
  EXPECT_LT(rms_where(fourier.average, clean, cubic.coverage, 12, 10), 0.01 * peak);
  EXPECT_LT(rms_where(cubic.average, clean, cubic.coverage, 12, 10), 0.01 * peak);
  // an integer shift is exact in Fourier: out(p) = f(p - t)
  Frame f = s.ideal_frame(0);
  Frame shifted = warp_to_reference(f, Transform::translation(3, -2), Interpolation::fourier, -1.0f);
  EXPECT_NEAR(shifted.at(40, 40), f.at(37, 42), 1e-3 * peak);
  EXPECT_EQ(shifted.at(1, 40), -1.0f);  // source outside the frame
  // Fourier handles translations only
  std::vector<Transform> rotated = truths(s);
  rotated[4] = Transform::rigid(0.01, 1, 1, {48, 48});
  EXPECT_THROW(average_series(frames, rotated, opt), Error);
}

TEST(Averaging, QualityRejectsAMisregisteredFrameAndListsExclude) {
  SynthOptions o = lattice_series(10);
  o.grain_boundary = false;
  SyntheticSeries s(o);
  FrameVector frames = first_frames(s, 10);
  std::vector<Transform> t = truths(s);
  t[7] = compose(Transform::translation(4.5, 0), t[7]);  // half a period off
  AveragingOptions opt;
  opt.min_quality = 0.0;
  AverageResult r = average_series(frames, t, opt);
  for (std::size_t k = 0; k < 10; ++k)
    if (k != 7) {
      EXPECT_GT(r.quality[k], r.quality[7] + 0.1) << k;
    }
  double threshold = 0.5 * (r.quality[7] + *std::min_element(r.quality.begin(), r.quality.begin() + 7));
  opt.min_quality = threshold;
  opt.exclude_frames = {2};
  AverageResult q = average_series(frames, t, opt);
  EXPECT_FALSE(q.used[7]);
  EXPECT_FALSE(q.used[2]);
  EXPECT_EQ(std::count(q.used.begin(), q.used.end(), true), 8);
  EXPECT_LE(q.coverage.at(48, 48), 8.0f);
  EXPECT_GT(q.quality[2], 0.0);  // still measured for the listed frame
  // the same result as averaging only the 8 good frames
  FrameVector eight;
  std::vector<Transform> t8;
  for (std::size_t k = 0; k < 10; ++k)
    if (k != 2 && k != 7) eight.push_back(frames.frames()[k]), t8.push_back(t[k]);
  AverageResult e = average_series(eight, t8, {});
  EXPECT_LT(rms_where(q.average, e.average, e.coverage, 1, 0), 1e-4);
}

TEST(Averaging, SameResultWhateverTheThreads) {
  SynthOptions o = lattice_series(12);
  SyntheticSeries s(o);
  FrameVector frames = first_frames(s, 12);
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  AverageResult one = average_series(frames, truths(s), {});
  omp_set_num_threads(3);
  AverageResult three = average_series(frames, truths(s), {});
  omp_set_num_threads(threads);
  EXPECT_EQ(one.average.pixels, three.average.pixels);
  EXPECT_EQ(one.quality, three.quality);
}

TEST(Averaging, MismatchedInputIsBadInput) {
  FrameVector frames;
  frames.push_back(Frame(8, 8, 1.0f));
  frames.push_back(Frame(9, 8, 1.0f));
  EXPECT_THROW(average_series(frames, {Transform::identity()}, {}), Error);                         // count
  EXPECT_THROW(average_series(frames, {Transform::identity(), Transform::identity()}, {}), Error);  // size
}
