// The synthetic generator's ground truth must match what it draws, noise must
// follow the requested dose, frames must be reproducible one by one, and the
// grain boundary must really break the lattice's periodicity.
#include <gtest/gtest.h>
#include <omp.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {

Point centroid(const Frame& f) {
  double s = 0, sx = 0, sy = 0;
  for (int y = 0; y < f.height; ++y)
    for (int x = 0; x < f.width; ++x) {
      double v = f.at(x, y);
      s += v, sx += v * x, sy += v * y;
    }
  return {sx / s, sy / s};
}

SynthOptions single_atom(double rotation_step_deg) {
  SynthOptions o;
  o.frames = 40;
  o.width = 64;
  o.height = 64;
  o.drift_step = 0.3;
  o.drift_linear_x = 0.21;
  o.drift_linear_y = -0.13;
  o.rotation_step_deg = rotation_step_deg;
  o.dose = 0;  // noise-free
  o.background = 0;
  o.atom_sigma = 1.3;
  o.atoms = {Point{37.3, 22.8}};
  o.seed = 11;
  return o;
}

}  // namespace

TEST(SyntheticSeries, SingleAtomCentroidFollowsTheTruth) {
  for (double rot : {0.0, 0.15}) {
    SynthOptions o = single_atom(rot);
    SyntheticSeries s(o);
    EXPECT_EQ(s.truth(0).apply(5, 7).x, 5.0);
    double total_motion = 0;
    for (std::size_t k = 0; k < s.frame_count(); ++k) {
      // f_k(p) = f_0(T_{0,k}(p)): the atom is drawn where T_{0,k} maps onto it.
      Point expected = s.truth(k).inverse().apply(o.atoms[0]);
      Point c = centroid(s.frame(k));
      EXPECT_NEAR(c.x, expected.x, 0.01) << "frame " << k << " rotation " << rot;
      EXPECT_NEAR(c.y, expected.y, 0.01) << "frame " << k << " rotation " << rot;
      total_motion = std::hypot(expected.x - o.atoms[0].x, expected.y - o.atoms[0].y);
    }
    EXPECT_GT(total_motion, 4.0);  // the atom really moved, by many pixels
  }
}

TEST(SyntheticSeries, TruthIsDriftAtTheCentreAndRotation) {
  SynthOptions o = single_atom(0.2);
  SyntheticSeries s(o);
  Point c = s.centre();
  for (std::size_t k : {std::size_t(0), std::size_t(7), std::size_t(39)}) {
    Point q = s.truth(k).apply(c);
    EXPECT_NEAR(q.x - c.x, s.drift(k).x, 1e-9);
    EXPECT_NEAR(q.y - c.y, s.drift(k).y, 1e-9);
    EXPECT_NEAR(s.truth(k).angle() * 180.0 / M_PI, 0.2 * static_cast<double>(k), 1e-9);
    EXPECT_NEAR(s.angle_deg(k), 0.2 * static_cast<double>(k), 1e-12);
  }
  // random walk + linear: the mean step is the linear drift
  SynthOptions lin = single_atom(0);
  lin.frames = 4001;
  lin.drift_step = 0.05;
  SyntheticSeries sl(lin);
  EXPECT_NEAR(sl.drift(4000).x / 4000.0, 0.21, 0.05 * 4.0 * std::sqrt(4000.0) / 4000.0);
  EXPECT_NEAR(sl.drift(4000).y / 4000.0, -0.13, 0.05 * 4.0 * std::sqrt(4000.0) / 4000.0);
}

TEST(SyntheticSeries, DeterministicInSeedAndFrame) {
  SynthOptions o;
  o.frames = 12;
  o.width = 96;
  o.height = 80;
  o.jitter = 0.2;
  o.read_noise = 0.5;
  SyntheticSeries a(o), b(o);
  Frame a7 = a.frame(7);  // drawn first, alone
  for (std::size_t k = 0; k < 12; ++k) b.frame(k);
  EXPECT_EQ(a7.pixels, b.frame(7).pixels);
  EXPECT_EQ(a.frame(3).pixels, b.frame(3).pixels);
  // the same whatever the number of threads
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  Frame single = a.frame(5);
  omp_set_num_threads(std::max(2, threads));
  Frame multi = a.frame(5);
  omp_set_num_threads(threads);
  EXPECT_EQ(single.pixels, multi.pixels);
  // another seed: another sample, another drift, another noise
  o.seed = 2;
  SyntheticSeries c(o);
  EXPECT_NE(c.frame(7).pixels, a7.pixels);
  EXPECT_NE(c.drift(5).x, a.drift(5).x);
  // frames of one series differ (noise and drift)
  EXPECT_NE(a.frame(6).pixels, a7.pixels);
}

TEST(SyntheticSeries, PoissonNoiseAtTheDose) {
  for (double dose : {0.7, 6.0, 40.0}) {
    SynthOptions o;
    o.frames = 2;
    o.width = 128;
    o.height = 128;
    o.dose = dose;
    o.background = 1.0;           // flat field at one column peak ...
    o.atoms = {Point{1e6, 1e6}};  // ... and no column in view
    SyntheticSeries s(o);
    Frame f = s.frame(1);
    double n = static_cast<double>(f.size()), sum = 0, sum2 = 0;
    bool integers = true;
    for (float v : f.pixels) {
      sum += v, sum2 += double(v) * v;
      integers = integers && v == std::round(v) && v >= 0;
    }
    double mean = sum / n, var = sum2 / n - mean * mean;
    EXPECT_TRUE(integers) << "dose " << dose;
    EXPECT_NEAR(mean, dose, 5 * std::sqrt(dose / n)) << "dose " << dose;
    // var of the sample variance of a Poisson: (mu + 2 mu^2) / n
    EXPECT_NEAR(var, dose, 5 * std::sqrt((dose + 2 * dose * dose) / n)) << "dose " << dose;
  }
  // with read noise the variance adds
  SynthOptions o;
  o.frames = 1;
  o.width = o.height = 128;
  o.dose = 6;
  o.read_noise = 2;
  o.background = 1.0;
  o.atoms = {Point{1e6, 1e6}};
  Frame f = SyntheticSeries(o).frame(0);
  double n = static_cast<double>(f.size()), sum = 0, sum2 = 0;
  for (float v : f.pixels) sum += v, sum2 += double(v) * v;
  double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 6, 0.1);
  EXPECT_NEAR(var, 10, 0.6);
}

TEST(SyntheticSeries, MeanCountAtAColumnPeakIsTheDose) {
  SynthOptions o;
  o.frames = 400;
  o.width = o.height = 16;
  o.dose = 6;
  o.background = 0;
  o.drift_step = 0;
  o.drift_linear_x = o.drift_linear_y = 0;
  o.atoms = {Point{8, 8}};
  SyntheticSeries s(o);
  EXPECT_NEAR(s.clean_frame(0).at(8, 8), 6.0f, 1e-5);
  double sum = 0;
  for (std::size_t k = 0; k < o.frames; ++k) sum += s.frame(k).at(8, 8);
  EXPECT_NEAR(sum / 400.0, 6.0, 5 * std::sqrt(6.0 / 400.0));
}

TEST(SyntheticSeries, GrainBoundaryBreaksPeriodicity) {
  SynthOptions o;
  o.frames = 1;
  o.width = 256;
  o.height = 128;
  o.period = 8;  // an integer lattice vector (8, 0) so shifts are exact
  o.lattice = Lattice::hex;
  o.vacancy_fraction = 0;
  o.intensity_spread = 0;
  o.dose = 1;
  // |f(x + 8, y) - f(x, y)| over two regions of the frame
  auto shift_difference = [](const Frame& f, int x0, int x1) {
    double worst = 0, ss = 0;
    long n = 0;
    for (int y = 0; y < f.height; ++y)
      for (int x = x0; x < x1; ++x) {
        double d = f.at(x + 8, y) - f.at(x, y);
        worst = std::max(worst, std::fabs(d));
        ss += d * d, ++n;
      }
    return std::make_pair(worst, std::sqrt(ss / n));
  };
  o.grain_boundary = false;
  Frame periodic = SyntheticSeries(o).ideal_frame(0);
  EXPECT_LT(shift_difference(periodic, 0, 248).first, 1e-3);

  o.grain_boundary = true;
  Frame gb = SyntheticSeries(o).ideal_frame(0);
  // The boundary runs through the centre (x = 127.5, tilted 8 degrees: within
  // +-10 px over the height), and the lattice left of it is untouched.
  EXPECT_LT(shift_difference(gb, 0, 90).first, 1e-3);
  EXPECT_EQ(std::vector<float>(gb.row(64), gb.row(64) + 90),
            std::vector<float>(periodic.row(64), periodic.row(64) + 90));
  // right of it the lattice is rotated: no longer periodic along (8, 0)
  auto right = shift_difference(gb, 150, 248);
  double peak = *std::max_element(gb.pixels.begin(), gb.pixels.end());
  EXPECT_GT(right.second, 0.1 * peak);
  EXPECT_GT(peak, 0.9);
}

TEST(SyntheticSeries, SquareLatticeIsPeriodicAlongBothAxes) {
  SynthOptions o;
  o.frames = 1;
  o.width = o.height = 64;
  o.period = 8;
  o.lattice = Lattice::square;
  o.vacancy_fraction = 0;
  o.intensity_spread = 0;
  o.grain_boundary = false;
  o.dose = 1;
  Frame f = SyntheticSeries(o).ideal_frame(0);
  double worst_x = 0, worst_y = 0, worst_hex = 0;
  for (int y = 0; y + 8 < 64; ++y)
    for (int x = 0; x + 8 < 64; ++x) {
      worst_x = std::max(worst_x, double(std::fabs(f.at(x + 8, y) - f.at(x, y))));
      worst_y = std::max(worst_y, double(std::fabs(f.at(x, y + 8) - f.at(x, y))));
    }
  EXPECT_LT(worst_x, 1e-3);
  EXPECT_LT(worst_y, 1e-3);
  // a hexagonal lattice is not periodic along (0, 8)
  o.lattice = Lattice::hex;
  Frame hex = SyntheticSeries(o).ideal_frame(0);
  for (int y = 0; y + 8 < 64; ++y)
    for (int x = 0; x < 64; ++x) worst_hex = std::max(worst_hex, double(std::fabs(hex.at(x, y + 8) - hex.at(x, y))));
  EXPECT_GT(worst_hex, 0.3);
}

TEST(SyntheticSeries, JitterMovesRowsNotTheIdealFrame) {
  SynthOptions o;
  o.frames = 2;
  o.width = o.height = 64;
  o.jitter = 0.3;
  o.dose = 0;
  SyntheticSeries s(o);
  Frame clean = s.clean_frame(1), ideal = s.ideal_frame(1);
  EXPECT_NE(clean.pixels, ideal.pixels);
  o.jitter = 0;
  EXPECT_EQ(SyntheticSeries(o).clean_frame(1).pixels, ideal.pixels);
  EXPECT_EQ(s.frame(1).pixels, clean.pixels);  // no dose, no read noise: the clean frame
}

TEST(SyntheticSeries, BadOptionsAreBadInput) {
  auto bad = [](const SynthOptions& o) {
    try {
      SyntheticSeries s(o);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_input);
      EXPECT_NE(std::string(e.what()).find("synthetic"), std::string::npos);
      return true;
    }
    return false;
  };
  SynthOptions o;
  o.frames = 0;
  EXPECT_TRUE(bad(o));
  o = {};
  o.period = 0.5;
  EXPECT_TRUE(bad(o));
  o = {};
  o.width = -3;
  EXPECT_TRUE(bad(o));
  o = {};
  o.vacancy_fraction = 1.5;
  EXPECT_TRUE(bad(o));
  o = {};
  o.drift_step = std::nan("");
  EXPECT_TRUE(bad(o));
}

namespace {
// Records the progress events a writer reports.
class RecordingProgress : public Progress {
 public:
  void start(const std::string&, const nlohmann::json&) override {}
  void phase(const std::string& name, std::size_t total) override { phases.emplace_back(name, total); }
  void advance(std::size_t done) override { last_done = done; }
  void log(LogLevel, const std::string&) override {}
  void result(const nlohmann::json&) override {}
  void error(const std::string&, int) override {}
  void cancelled() override {}
  std::vector<std::pair<std::string, std::size_t>> phases;
  std::size_t last_done = 0;
};
}  // namespace

TEST(SyntheticSeries, WritesSeriesTruthAndReference) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("driftscan_synth_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SynthOptions o;
  o.frames = 6;
  o.width = 40;
  o.height = 32;
  o.rotation_step_deg = 0.05;
  RecordingProgress progress;
  SynthOutputs out = write_synthetic_series(o, (dir / "series.tif").string(), &progress);
  EXPECT_EQ(out.truth, (dir / "series_truth.csv").string());
  EXPECT_EQ(out.reference, (dir / "series_reference.tif").string());
  ASSERT_EQ(progress.phases.size(), 1u);
  EXPECT_EQ(progress.phases[0].second, 6u);
  EXPECT_EQ(progress.last_done, 6u);

  SyntheticSeries s(o);
  auto series = TiffSeries::open(out.series);
  ASSERT_EQ(series->frame_count(), 6u);
  EXPECT_EQ(series->width(), 40);
  EXPECT_EQ(series->info().pixel_type, PixelType::float32);
  for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(series->frame(k).pixels, s.frame(k).pixels) << k;
  EXPECT_EQ(TiffSeries::open(out.reference)->frame(0).pixels, s.ideal_frame(0).pixels);

  std::ifstream csv(out.truth);
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "frame,dx,dy,angle_deg");
  for (std::size_t k = 0; k < 6; ++k) {
    ASSERT_TRUE(std::getline(csv, line));
    std::size_t frame;
    double dx, dy, angle;
    ASSERT_EQ(std::sscanf(line.c_str(), "%zu,%lf,%lf,%lf", &frame, &dx, &dy, &angle), 4) << line;
    EXPECT_EQ(frame, k);
    EXPECT_NEAR(dx, s.drift(k).x, 1e-6);
    EXPECT_NEAR(dy, s.drift(k).y, 1e-6);
    EXPECT_NEAR(angle, 0.05 * double(k), 1e-8);
  }
  EXPECT_FALSE(std::getline(csv, line));

  // cancelled before the end: no file that looks complete, no leftovers
  fs::path dir2 = dir / "cancelled";
  fs::create_directories(dir2);
  CancelToken cancel;
  cancel.request();
  EXPECT_THROW(write_synthetic_series(o, (dir2 / "s.tif").string(), nullptr, &cancel), Error);
  EXPECT_TRUE(fs::is_empty(dir2));
  // an output folder that does not exist: an error naming it
  try {
    write_synthetic_series(o, (dir / "missing" / "s.tif").string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}
