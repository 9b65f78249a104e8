// The real ABF STEM series (stem_abf_series.tif of the optional sample data,
// sample_data.hpp; 5 frames of
// SrTiO3, a periodic lattice drifting a few pixels per frame): no period
// jumps, the reversed series gives the same motion backwards, and the
// average is measurably better than any single frame.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/spectra/power_spectrum.hpp"
#include "sample_data.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

const std::string kSeries = test::sample_file("stem_abf_series.tif");  // "" when absent

struct Registered {
  RegisterResult result;
  FrameVector frames;
};

Registered register_frames(FrameVector frames, const std::string& tag) {
  fs::path out = fs::temp_directory_path() / ("driftscan_real_" + std::to_string(::getpid()) + "_" + tag);
  auto progress = make_silent_progress();
  CancelToken cancel;
  Registered r{register_series(frames, RegistrationSettings{}, AveragingOptions{}, out.string(), *progress, cancel, 2),
               FrameVector{}};
  r.frames = std::move(frames);
  fs::remove_all(out);
  return r;
}

}  // namespace

class RealAbfSeries : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kSeries.empty()) GTEST_SKIP() << test::sample_absent("stem_abf_series.tif");
    auto s = TiffSeries::open(kSeries);
    for (std::size_t k = 0; k < s->frame_count(); ++k) {
      forward_.push_back(s->frame(k));
    }
    for (std::size_t k = s->frame_count(); k-- > 0;) backward_.push_back(s->frame(k));
  }
  FrameVector forward_, backward_;
};

TEST_F(RealAbfSeries, NoPeriodJumps) {
  Registered r = register_frames(forward_, "fwd");
  const auto& reg = r.result.registrations;
  ASSERT_EQ(reg.size(), 5u);
  RegistrationOperator op(r.frames, RegistrationSettings{});
  PairShift probe = op.pair_plan().execute(r.frames.frames()[0], r.frames.frames()[1]);
  const double lattice = probe.lattice_vector;
  ASSERT_GT(lattice, 10.0) << "the SrTiO3 lattice should be detected";
  for (std::size_t k = 1; k < reg.size(); ++k) {
    EXPECT_EQ(reg[k].flags, 0u) << "frame " << k;
    // The final (0 -> k) results must agree with the unambiguous consecutive
    // pair registrations to far less than a lattice period.
    Transform step = compose(reg[k - 1].transform.inverse(), reg[k].transform);
    const Registration& e = r.result.elements[k];
    double gap = std::hypot(step.tx - e.transform.tx, step.ty - e.transform.ty);
    EXPECT_LT(gap, 1.0) << "frame " << k;
    EXPECT_LT(std::hypot(step.tx, step.ty), 0.5 * lattice) << "frame " << k;
  }
  // It did drift, by more than noise.
  EXPECT_GT(std::hypot(reg[4].transform.tx, reg[4].transform.ty), 5.0);
}

TEST_F(RealAbfSeries, ReversedSeriesGivesTheSameMotionBackwards) {
  Registered f = register_frames(forward_, "fwd2");
  Registered b = register_frames(backward_, "bwd");
  const std::size_t n = 5;
  const Point c{255.5, 255.5};
  const Point last = f.result.registrations[n - 1].transform.displacement(c);
  for (std::size_t j = 0; j < n; ++j) {
    Point dj = b.result.registrations[j].transform.displacement(c);
    Point d = f.result.registrations[n - 1 - j].transform.displacement(c);
    // d'_j = d_{N-1-j} - d_{N-1}
    EXPECT_NEAR(dj.x, d.x - last.x, 0.1) << "frame " << j << " of the reversed series";
    EXPECT_NEAR(dj.y, d.y - last.y, 0.1) << "frame " << j << " of the reversed series";
  }
}

TEST_F(RealAbfSeries, AverageIsBetterThanAnySingleFrame) {
  Registered r = register_frames(forward_, "avg");
  const Frame& avg = r.result.average.average;
  const Frame& cov = r.result.average.coverage;
  // Compare on the central region every frame covers.
  auto crop = [](const Frame& f) {
    Frame c(384, 384);
    for (int y = 0; y < 384; ++y)
      for (int x = 0; x < 384; ++x) c.at(x, y) = f.at(x + 64, y + 64);
    return c;
  };
  for (int y = 64; y < 448; y += 37)
    for (int x = 64; x < 448; x += 41) ASSERT_GE(cov.at(x, y), 4.99f) << x << "," << y;
  PowerSpectrum ps(384, 384);
  SpectrumPeak a = ps.strongest_peak(crop(avg));
  for (const Frame& f : forward_.frames()) {
    SpectrumPeak p = ps.strongest_peak(crop(f));
    // Same lattice, sharper over a lower noise floor.
    EXPECT_NEAR(a.period, p.period, 0.5);
    EXPECT_GT(a.sharpness, 2.5 * p.sharpness);
    EXPECT_LT(a.background, 0.5 * p.background);
  }
}
