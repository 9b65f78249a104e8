// The affine model end to end with a real shear: frames made by warping a
// noise-free synthetic lattice with known affine maps (scale, shear and a
// drift that grow frame by frame), plus noise, registered through the whole
// pipeline (pairs, scan with refinement, average, drift.csv); the recovered
// matrices and shifts are checked against the truth.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "csv_test_file.hpp"
#include "driftscan/averaging/averaging.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

using driftscan::test::read_csv;

// T_{0,k}: f_k(p) = f_0(T(p)); the matrix acts about the frame centre c.
Transform affine_truth(std::size_t k, Point c) {
  const double t = static_cast<double>(k);
  Transform T;
  T.a = 1.0 + 0.002 * t;
  T.b = 0.004 * t;  // shear: x moves with y
  T.c = -0.0015 * t;
  T.d = 1.0 - 0.001 * t;
  const Point shift{0.6 * t, -0.35 * t};
  T.tx = c.x - (T.a * c.x + T.b * c.y) + shift.x;
  T.ty = c.y - (T.c * c.x + T.d * c.y) + shift.y;
  return T;
}

}  // namespace

TEST(AffineRegistration, ShearedSeriesRecoversTheMatricesThroughThePipeline) {
  SynthOptions o;
  o.frames = 1;
  o.width = o.height = 128;
  o.dose = 0;  // noise added below, after the warp
  o.seed = 7;
  SyntheticSeries lattice(o);
  const Frame f0 = lattice.ideal_frame(0);
  const Point c = lattice.centre();
  double mean = 0;
  for (float v : f0.pixels) mean += v;
  mean /= static_cast<double>(f0.size());

  const std::size_t n = 8;
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 0.05f);  // 5% of a column's peak
  FrameVector frames;
  for (std::size_t k = 0; k < n; ++k) {
    // warp_to_reference gives out(p) = f(T^{-1}(p)): with T = truth^{-1}, f_0(truth(p)).
    Frame f = warp_to_reference(f0, affine_truth(k, c).inverse(), Interpolation::cubic, float(mean));
    for (float& v : f.pixels) v += noise(rng);
    frames.push_back(std::move(f));
  }
  // A real shear: the last frame's corners move ~1.8 px against its centre.
  ASSERT_GT(std::abs(affine_truth(n - 1, c).b) * c.y, 1.5);

  const fs::path dir = fs::temp_directory_path() / ("driftscan_affine_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RegistrationSettings rs;
  rs.model = MotionModel::affine;
  auto progress = make_silent_progress();
  CancelToken cancel;
  RegisterResult r = register_series(frames, rs, {}, dir.string(), *progress, cancel, 2);
  ASSERT_EQ(r.registrations.size(), n);

  auto rows = read_csv(dir / "drift.csv");
  ASSERT_EQ(rows.size(), n + 1);
  ASSERT_GE(rows[0].size(), 10u);
  ASSERT_EQ(rows[0][4], "a");
  for (std::size_t k = 1; k < n; ++k) {
    const Transform truth = affine_truth(k, c), got = r.registrations[k].transform;
    EXPECT_NEAR(got.a, truth.a, 1e-3) << "frame " << k;
    EXPECT_NEAR(got.b, truth.b, 1e-3) << "frame " << k;
    EXPECT_NEAR(got.c, truth.c, 1e-3) << "frame " << k;
    EXPECT_NEAR(got.d, truth.d, 1e-3) << "frame " << k;
    // Everywhere in the frame, not only at the centre.
    for (Point p : {c, Point{0, 0}, Point{127, 0}, Point{0, 127}, Point{127, 127}}) {
      const Point e = got.apply(p), t = truth.apply(p);
      EXPECT_LT(std::hypot(e.x - t.x, e.y - t.y), 0.1) << "frame " << k << " at " << p.x << "," << p.y;
    }
    // drift.csv carries the same matrix and the displacement at the centre.
    const auto& row = rows[k + 1];
    EXPECT_NEAR(std::stod(row[1]), truth.displacement(c).x, 0.05) << "frame " << k;
    EXPECT_NEAR(std::stod(row[2]), truth.displacement(c).y, 0.05) << "frame " << k;
    EXPECT_NEAR(std::stod(row[4]), truth.a, 1e-3) << "frame " << k;
    EXPECT_NEAR(std::stod(row[5]), truth.b, 1e-3) << "frame " << k;
    EXPECT_NEAR(std::stod(row[6]), truth.c, 1e-3) << "frame " << k;
    EXPECT_NEAR(std::stod(row[7]), truth.d, 1e-3) << "frame " << k;
  }
  fs::remove_all(dir);
}
