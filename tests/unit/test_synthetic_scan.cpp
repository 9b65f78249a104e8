// Synthetic series with raster timing: drift during a frame must shear and
// bend it exactly as the acquisition model says (line y of frame k shows the
// specimen moved by d(t) at that line's time, plus the line's jitter), the
// drift path must be continuous across frames, the per-line truth file must
// hold what the frames were drawn with, and without timing nothing changes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "csv_test_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {

using driftscan::test::read_csv;

// A straight ridge of columns one pixel apart, along y at x = x0 (or along x
// at y = y0): every scan line crosses it once, so each line's centroid across
// the ridge says where that line saw the specimen.
SynthOptions ridge(bool vertical, double at) {
  SynthOptions o;
  o.frames = 4;
  o.width = 64;
  o.height = 64;
  o.atom_sigma = 1.5;
  o.background = 0.0;
  o.dose = 0.0;  // noise-free
  o.drift_step = 0.0;
  o.drift_linear_x = 0.0;
  o.drift_linear_y = 0.0;
  for (int i = -40; i < 104; ++i) o.atoms.push_back(vertical ? Point{at, double(i)} : Point{double(i), at});
  o.scan_dwell = 1e-6;
  o.scan_line_flyback = 0.25;
  o.scan_frame_flyback = 0.1;
  return o;
}

// Centroid across the ridge of row y (or of column x).
double row_centroid(const Frame& f, int y) {
  double s = 0, sx = 0;
  for (int x = 0; x < f.width; ++x) s += f.at(x, y), sx += f.at(x, y) * x;
  return sx / s;
}
double column_centroid(const Frame& f, int x) {
  double s = 0, sy = 0;
  for (int y = 0; y < f.height; ++y) s += f.at(x, y), sy += f.at(x, y) * y;
  return sy / s;
}

}  // namespace

TEST(SyntheticScan, ConstantVelocityShearsEachFrameLineByLine) {
  SynthOptions o = ridge(true, 30.0);
  o.drift_linear_x = 4.0;  // pixels per frame time
  SyntheticSeries s(o);
  ASSERT_TRUE(s.scanned());
  const ScanTiming& t = s.scan_timing();
  const double v = o.drift_linear_x / t.frame_time();  // pixels per second
  double worst = 0;
  for (std::size_t k = 0; k < o.frames; ++k) {
    Frame f = s.clean_frame(k);
    const double c0 = row_centroid(f, 0);
    // Pixel x shows the specimen at x + d: the ridge appears at 30 - d.
    EXPECT_NEAR(c0, 30.0 - v * t.line_mid_time(k, 0), 0.01) << "frame " << k;
    for (int y = 1; y < o.height; ++y) {
      const double expected = -v * y * t.line_time();  // relative to line 0
      worst = std::max(worst, std::fabs(row_centroid(f, y) - c0 - expected));
    }
  }
  std::printf("synthetic scan: shear v*y*T_line reproduced to %.5f px (%.3f px over the frame)\n", worst,
              v * (o.height - 1) * t.line_time());
  // What remains is the drift along the line: the ridge is crossed
  // (c(y) - c(0)) dwells later on line y than on line 0, ~0.0026 px here.
  EXPECT_LT(worst, 0.005);
}

TEST(SyntheticScan, Rotated90ScanShearsAlongTheOtherAxis) {
  SynthOptions o = ridge(false, 28.0);
  o.scan_direction = ScanDirection::rotated90;
  o.drift_linear_y = -3.0;
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  const double v = o.drift_linear_y / t.frame_time();
  Frame f = s.clean_frame(2);
  const double c0 = column_centroid(f, 0);
  EXPECT_NEAR(c0, 28.0 - v * t.line_mid_time(2, 0), 0.01);
  for (int x = 1; x < o.width; ++x) EXPECT_NEAR(column_centroid(f, x) - c0, -v * x * t.line_time(), 0.005) << x;
}

TEST(SyntheticScan, EachLineShowsTheDriftPathAtItsTimePlusItsJitter) {
  // A bending path (wobble + random walk) and jittered lines, serpentine.
  SynthOptions o = ridge(true, 32.0);
  o.drift_linear_x = 1.5;
  o.drift_wobble = 2.0;
  o.drift_wobble_period = 1.3;
  o.drift_step = 0.4;
  o.jitter = 0.5;
  o.scan_direction = ScanDirection::serpentine;
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  double worst = 0, bend = 0;
  for (std::size_t k = 0; k < o.frames; ++k) {
    Frame f = s.clean_frame(k);
    for (int y = 0; y < o.height; ++y) {
      // The line crosses the ridge where x + d(t(x)) + j = 32: at the time
      // of that pixel, not of the line's middle (a few dwells apart).
      const double j = s.line_jitter(k, y);
      double c = 32.0;
      for (int i = 0; i < 4; ++i) c = 32.0 - j - s.drift_at(t.time_of(k, c, y)).x;
      worst = std::max(worst, std::fabs(row_centroid(f, y) - c));
      bend = std::max(bend, std::fabs(s.drift_at(t.line_mid_time(k, y)).x - s.drift_at(t.line_mid_time(k, 0)).x));
    }
  }
  std::printf("synthetic scan: line centroids follow d(t) + jitter to %.5f px (path moves %.2f px within a frame)\n",
              worst, bend);
  EXPECT_LT(worst, 0.002);
  EXPECT_GT(bend, 1.0);  // the frames really are bent
  // probed() is the same model, pixel by pixel.
  Point p = s.probed(1, 10, 7);
  EXPECT_NEAR(p.x, 10 + s.drift_at(t.time_of(1, 10, 7)).x + s.line_jitter(1, 7), 1e-12);
  EXPECT_NEAR(p.y, 7 + s.drift_at(t.time_of(1, 10, 7)).y, 1e-12);
}

TEST(SyntheticScan, DriftPathIsContinuousAndStartsAtZero) {
  SynthOptions o;
  o.frames = 20;
  o.width = 48;
  o.height = 40;
  o.drift_step = 0.5;
  o.drift_wobble = 1.0;
  o.scan_dwell = 2e-6;
  o.scan_frame_flyback = 0.2;
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  EXPECT_EQ(s.drift_at(0.0).x, 0.0);
  EXPECT_EQ(s.drift_at(0.0).y, 0.0);
  double worst = 0;
  for (std::size_t k = 1; k < o.frames; ++k) {
    const double b = t.frame_start(k), eps = 1e-12;
    Point a = s.drift_at(b - eps), c = s.drift_at(b + eps);
    worst = std::max({worst, std::fabs(a.x - c.x), std::fabs(a.y - c.y)});
  }
  EXPECT_LT(worst, 1e-6);
  // The per-frame truth is the rigid summary: d at mid times, relative to frame 0's.
  for (std::size_t k = 0; k < o.frames; ++k) {
    Point d = s.drift(k), a = s.drift_at(t.frame_mid_time(k)), a0 = s.drift_at(t.frame_mid_time(0));
    EXPECT_NEAR(d.x, a.x - a0.x, 1e-12);
    EXPECT_NEAR(d.y, a.y - a0.y, 1e-12);
  }
  EXPECT_EQ(s.drift(0).x, 0.0);
}

TEST(SyntheticScan, WithoutDriftAScanEqualsAnInstantFrame) {
  SynthOptions o;
  o.frames = 3;
  o.width = 70;
  o.height = 50;
  o.drift_step = 0.0;
  o.drift_linear_x = 0.0;
  o.drift_linear_y = 0.0;
  o.jitter = 0.3;
  SynthOptions scanned = o;
  scanned.scan_dwell = 1e-6;
  Frame instant = SyntheticSeries(o).clean_frame(2), scan = SyntheticSeries(scanned).clean_frame(2);
  double worst = 0;
  for (std::size_t i = 0; i < instant.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(instant.pixels[i] - scan.pixels[i])));
  EXPECT_LT(worst, 1e-4 * SyntheticSeries(o).counts_scale());  // same jitter, same columns; float sums only
}

TEST(SyntheticScan, WritesThePerLineTruth) {
  SynthOptions o;
  o.frames = 3;
  o.width = 32;
  o.height = 24;
  o.jitter = 0.2;
  o.drift_wobble = 0.5;
  o.scan_dwell = 1e-6;
  o.scan_line_flyback = 0.2;
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("driftscan_scan_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SynthOutputs out = write_synthetic_series(o, (dir / "series.tif").string());
  EXPECT_EQ(out.lines_truth, (dir / "series_lines_truth.csv").string());
  auto rows = read_csv(out.lines_truth);
  ASSERT_EQ(rows.size(), 1u + 3 * 24);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"frame", "line", "t", "dx", "dy", "jitter"}));
  SyntheticSeries s(o);
  const ScanTiming& t = s.scan_timing();
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const std::size_t k = std::stoul(rows[r][0]);
    const int line = std::stoi(rows[r][1]);
    EXPECT_EQ(k, (r - 1) / 24);
    EXPECT_EQ(line, static_cast<int>((r - 1) % 24));
    const double time = std::stod(rows[r][2]);
    EXPECT_NEAR(time, t.line_mid_time(k, line), 1e-12);
    EXPECT_NEAR(std::stod(rows[r][3]), s.drift_at(time).x, 1e-6);
    EXPECT_NEAR(std::stod(rows[r][4]), s.drift_at(time).y, 1e-6);
    EXPECT_NEAR(std::stod(rows[r][5]), s.line_jitter(k, line), 1e-6);
  }
  auto truth = read_csv(out.truth);
  ASSERT_EQ(truth.size(), 4u);
  EXPECT_NEAR(std::stod(truth[2][1]), s.drift(1).x, 1e-6);
  // Without timing there is no per-line truth.
  SynthOptions instant = o;
  instant.scan_dwell = 0;
  SynthOutputs plain = write_synthetic_series(instant, (dir / "plain.tif").string());
  EXPECT_TRUE(plain.lines_truth.empty());
  EXPECT_FALSE(fs::exists(dir / "plain_lines_truth.csv"));
  fs::remove_all(dir);
}

TEST(SyntheticScan, BadTimingIsAOneLineError) {
  auto message = [](const SynthOptions& o) {
    try {
      SyntheticSeries s(o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  SynthOptions o;
  o.frames = 2;
  o.width = 16;
  o.height = 16;
  o.scan_dwell = -1;
  EXPECT_NE(message(o).find("scan dwell"), std::string::npos);
  o.scan_dwell = 1e-6;
  o.scan_line_flyback = 1.5;
  EXPECT_NE(message(o).find("line fly-back fraction"), std::string::npos);
  o.scan_line_flyback = 0;
  o.rotation_step_deg = 0.5;
  EXPECT_NE(message(o).find("rotation"), std::string::npos);
  o.rotation_step_deg = 0;
  o.drift_wobble_period = 0;
  EXPECT_NE(message(o).find("wobble period"), std::string::npos);
  o.drift_wobble_period = 8;
  EXPECT_EQ(message(o), "");
  EXPECT_THROW(SyntheticSeries(SynthOptions{}).scan_timing(), std::logic_error);
}
