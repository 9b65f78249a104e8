// Frames scanned in several directions (core/scan_rotation.hpp): the turn
// back into frame 0's orientation must be exact for quarter turns and undo
// the synthetic series' own rotation, the jitter of a rotated frame must run
// along that frame's fast axis, and rotations that do not fit the series must
// be refused with one line naming the frame or the setting.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/derotated_source.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/job/job.hpp"
#include "driftscan/registration/registration_operator.hpp"
#include "driftscan/scan_distortion/scan_distortion.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"

using namespace driftscan;

namespace {

// A frame whose every pixel is distinct: a wrong index shows.
Frame ramp(int w, int h) {
  Frame f(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) f.at(x, y) = static_cast<float>(1000 * y + x);
  return f;
}

double max_difference(const Frame& a, const Frame& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a.pixels[i]) - b.pixels[i]));
  return worst;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    return e.what();
  }
  return "(no error)";
}

SynthOptions small_series(std::vector<double> rotations) {
  SynthOptions o;
  o.frames = 8;
  o.width = o.height = 64;
  o.period = 7.0;
  o.dose = 0.0;
  o.drift_step = 0.2;
  o.scan_rotation_deg = std::move(rotations);
  return o;
}

}  // namespace

TEST(ScanRotation, QuarterTurnsAreRecognisedModuloAFullTurn) {
  EXPECT_EQ(quarter_turns(0), 0);
  EXPECT_EQ(quarter_turns(90), 1);
  EXPECT_EQ(quarter_turns(-90), 3);
  EXPECT_EQ(quarter_turns(450), 1);
  EXPECT_EQ(quarter_turns(180), 2);
  EXPECT_EQ(quarter_turns(30), -1);
  EXPECT_EQ(quarter_turns(90.001), -1);
  EXPECT_FALSE(has_scan_rotation({0, 360, -720}));
  EXPECT_TRUE(has_scan_rotation({0, 90}));
  EXPECT_DOUBLE_EQ(scan_rotation_of({0, 90, 180, 270}, 6), 180.0);
  EXPECT_DOUBLE_EQ(scan_rotation_of({}, 6), 0.0);
}

TEST(ScanRotation, FastAxisFollowsTheConvention) {
  // At 90° the fast axis runs down frame 0's columns.
  const Point f90 = scan_fast_axis(90), f180 = scan_fast_axis(180), f30 = scan_fast_axis(30);
  EXPECT_EQ(f90.x, 0.0);
  EXPECT_EQ(f90.y, 1.0);
  EXPECT_EQ(f180.x, -1.0);
  EXPECT_NEAR(f30.x, std::cos(M_PI / 6), 1e-12);
  EXPECT_NEAR(f30.y, std::sin(M_PI / 6), 1e-12);
}

TEST(ScanRotation, QuarterTurnsAreExactPixelMovesAboutTheCentre) {
  const Frame f = ramp(6, 6);
  // The frame's recorded pixel (0, 0) at 90° shows frame 0's point c + R(90°)(-c) = (5, 0).
  const Frame d90 = derotate(f, 90);
  EXPECT_EQ(d90.at(5, 0), f.at(0, 0));
  EXPECT_EQ(d90.at(5, 1), f.at(1, 0));  // the recorded row runs down frame 0's column
  // Four quarter turns, or two half turns, give the frame back exactly.
  Frame g = f;
  for (int i = 0; i < 4; ++i) g = derotate(g, 90);
  EXPECT_EQ(max_difference(g, f), 0.0);
  EXPECT_EQ(max_difference(derotate(derotate(ramp(8, 5), 180), 180), ramp(8, 5)), 0.0);
  // The same as the general formula sampled at the pixel centres.
  const Transform t = scan_rotation_transform(270, 6, 6);
  const Frame d270 = derotate(f, 270);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 6; ++x) {
      const Point p = t.apply(x, y);
      EXPECT_EQ(d270.at(static_cast<int>(std::lround(p.x)), static_cast<int>(std::lround(p.y))), f.at(x, y));
    }
}

TEST(ScanRotation, GeneralAnglesAreSampledWithTheCornersMissing) {
  SynthOptions o = small_series({0, 30});
  o.drift_step = 0.0;
  o.drift_linear_x = o.drift_linear_y = 0.0;
  o.atom_sigma = 1.5;  // smooth enough for cubic sampling to be judged at 5%
  SyntheticSeries s(o);
  const Frame back = derotate(s.clean_frame(1), 30);
  EXPECT_TRUE(std::isnan(back.at(0, 0)));  // a corner no rotated pixel reached
  const Frame ideal = s.ideal_frame(1);
  double worst = 0;
  for (int y = 20; y < 44; ++y)
    for (int x = 20; x < 44; ++x) worst = std::max(worst, std::fabs(double(back.at(x, y)) - ideal.at(x, y)));
  EXPECT_LT(worst, 0.05);  // cubic B-spline sampling of a noise-free frame
}

TEST(ScanRotation, ThePixelsEveryTurnCoversFormAnOctagonAt45Degrees) {
  const Frame quarter = covered_by_every_turn({0, 90}, 65, 65, 2.0);
  const Frame eighth = covered_by_every_turn({0, 45}, 65, 65, 2.0);
  double q = 0, e = 0;
  for (std::size_t i = 0; i < quarter.size(); ++i) q += quarter.pixels[i], e += eighth.pixels[i];
  EXPECT_EQ(q, 61.0 * 61.0);                               // the frame less the margin
  EXPECT_NEAR(e / q, 2.0 * (std::sqrt(2.0) - 1.0), 0.03);  // the regular octagon in its square
  EXPECT_EQ(eighth.at(32, 32), 1.0f);
  EXPECT_EQ(eighth.at(3, 3), 0.0f);
  EXPECT_EQ(eighth.at(32, 3), 1.0f);
}

TEST(ScanRotation, TheSquareEveryFrameCoversShrinksWithTheWorstTurn) {
  EXPECT_FALSE(turns_off_grid({0, 90, 180, 270}));
  EXPECT_TRUE(turns_off_grid({0, 90, 135}));
  EXPECT_DOUBLE_EQ(covered_half_side({0, 90, 180, 270}, 65, 65), 32.0);
  EXPECT_NEAR(covered_half_side({0, 45}, 65, 65), 32.0 / std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(covered_half_side({0, 30, 90}, 65, 65), 32.0 / (std::cos(M_PI / 6) + std::sin(M_PI / 6)), 1e-12);
  EXPECT_NEAR(covered_half_side({0, 45}, 65, 65), covered_half_side({0, 135, 225, 315}, 65, 65), 1e-12);
  // Every pixel of that square is covered at every one of the turns (finite
  // when the recorded frame is), and some pixel outside it is not.
  const Frame recorded = ramp(65, 65);
  for (double deg : {30.0, 45.0, 100.0}) {
    const Frame back = derotate(recorded, deg);
    const double half = covered_half_side({0, deg}, 65, 65);
    bool uncovered_outside = false;
    for (int y = 0; y < 65; ++y)
      for (int x = 0; x < 65; ++x) {
        const bool inside = std::fabs(x - 32.0) <= half && std::fabs(y - 32.0) <= half;
        if (inside) EXPECT_TRUE(std::isfinite(back.at(x, y))) << deg << " deg at " << x << "," << y;
        if (!inside && std::isnan(back.at(x, y))) uncovered_outside = true;
      }
    EXPECT_TRUE(uncovered_outside) << deg;
  }
}

TEST(ScanRotation, RegistrationReadsFilledCornersInsideTheCoveredSquare) {
  SynthOptions o = small_series({0, 45});
  o.width = o.height = 96;
  auto turned = std::make_shared<DerotatedSource>(std::make_shared<SyntheticSeries>(o), std::vector<double>{0, 45});
  ASSERT_TRUE(turned->leaves_corners());
  EXPECT_TRUE(std::isnan(turned->frame(1).at(0, 0)));
  const auto filled = turned->with_filled_corners();
  const Frame f = filled->frame(1);
  for (float v : f.pixels) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(f.at(48, 48), turned->frame(1).at(48, 48));  // only the corners change
  // The operator registers inside the covered square, less its margin.
  const RegistrationOperator op(*turned, RegistrationSettings{});
  const Roi& roi = op.settings().roi;
  const double half = covered_half_side({0, 45}, 96, 96);
  EXPECT_FALSE(roi.whole_frame());
  EXPECT_GE(roi.x, 47.5 - half);
  EXPECT_LE(roi.x + roi.w - 1, 47.5 + half);
  EXPECT_EQ(roi.x, roi.y);
  EXPECT_GT(roi.w, 40);
  for (float v : op.frames().frame(1).pixels) ASSERT_TRUE(std::isfinite(v));
  // The refinements use every pixel both turns cover (an octagon at 45°),
  // more than the pairs' square, and no pixel a turned frame does not reach.
  const RefineOptions& refine = op.refinement().options();
  ASSERT_TRUE(refine.mask);
  std::size_t used = 0;
  const Frame turned1 = turned->frame(1);
  for (int y = 0; y < 96; ++y)
    for (int x = 0; x < 96; ++x) {
      if (refine.mask->at(x, y) == 0.0f) continue;
      ++used;
      ASSERT_TRUE(std::isfinite(turned1.at(x, y))) << x << "," << y;
      ASSERT_TRUE(x >= refine.roi.x && x < refine.roi.x + refine.roi.w && y >= refine.roi.y &&
                  y < refine.roi.y + refine.roi.h);
    }
  EXPECT_GT(used, static_cast<std::size_t>(1.4 * roi.w * roi.h));
  EXPECT_FALSE(refine.mask->at(2, 2) != 0.0f);  // a corner the 45° frame leaves uncovered
  // A user's ROI is cut to it; one outside it leaves nothing: one line.
  RegistrationSettings corner;
  corner.roi = Roi{0, 0, 16, 16};
  EXPECT_NE(message_of([&] { RegistrationOperator(*turned, corner); }).find("less than 8x8 pixels to register"),
            std::string::npos);
}

TEST(ScanRotation, SyntheticFramesTurnedBackShowFrameZerosOrientation) {
  SyntheticSeries s(small_series({0, 90, 180, 270}));
  for (std::size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(s.scan_rotation_deg(k), 90.0 * static_cast<double>(k % 4));
    const Frame recorded = s.clean_frame(k);
    const Frame back = derotate(recorded, s.scan_rotation_deg(k));
    EXPECT_LT(max_difference(back, s.ideal_frame(k)), 1e-4) << "frame " << k;
    if (k % 2 == 1) {
      EXPECT_GT(max_difference(recorded, s.ideal_frame(k)), 0.1) << "frame " << k << " is turned";
    }
  }
  // The same frames through the source the register run reads.
  DerotatedSource source(std::make_shared<SyntheticSeries>(small_series({0, 90, 180, 270})), {0, 90, 180, 270});
  EXPECT_LT(max_difference(source.frame(3), s.ideal_frame(3)), 1e-4);
}

TEST(ScanRotation, ScannedJitterRunsAlongEachFramesOwnFastAxis) {
  // A horizontal ridge: a frame scanned at 90° has its lines along y, so its
  // jitter moves the ridge up and down column by column; at 0° the lines run
  // along the ridge and jitter leaves it where it is.
  SynthOptions o;
  o.frames = 2;
  o.width = o.height = 48;
  o.atom_sigma = 1.5;
  o.background = 0.0;
  o.dose = 0.0;
  o.drift_step = o.drift_linear_x = o.drift_linear_y = 0.0;
  o.jitter = 0.4;
  for (int i = -40; i < 90; ++i) o.atoms.push_back({double(i), 20.0});
  o.scan_dwell = 1e-6;
  o.scan_rotation_deg = {0, 90};
  SyntheticSeries s(o);
  const Frame back = derotate(s.clean_frame(1), 90);
  double worst = 0, moved = 0;
  for (int x = 0; x < o.width; ++x) {
    double sum = 0, sy = 0;
    for (int y = 0; y < o.height; ++y) sum += back.at(x, y), sy += back.at(x, y) * y;
    const int line = (o.width - 1) - x;  // recorded row r lands on frame 0's column W-1-r at 90°
    const double expected = 20.0 - s.line_jitter(1, line);
    worst = std::max(worst, std::fabs(sy / sum - expected));
    moved = std::max(moved, std::fabs(s.line_jitter(1, line)));
    const Point p = s.probed(1, 3.0, static_cast<double>(line));
    EXPECT_NEAR(p.y, 3.0 + s.line_jitter(1, line), 1e-9);  // probed: turned, then along the fast axis
    EXPECT_NEAR(p.x, x, 1e-9);
  }
  EXPECT_GT(moved, 0.3);
  EXPECT_LT(worst, 1e-3);
}

TEST(ScanRotation, RotationsThatDoNotFitTheSeriesAreNamed) {
  EXPECT_EQ(message_of([] {
              check_scan_rotations({0, 90, 180}, 2, 64, 64, "s.tif: ");
            }),
            "s.tif: scan.rotation: 3 rotations for 2 frame(s); frame 2 onwards do not exist (give at most one "
            "rotation per frame)");
  EXPECT_EQ(message_of([] {
              check_scan_rotations({0, 90}, 4, 64, 32, "s.tif: ");
            }),
            "s.tif: frame 1: scan rotation 90° turns its 64x32 raster off frame 0's grid (only 0° and 180° fit "
            "non-square frames)");
  EXPECT_EQ(message_of([] {
              check_scan_rotations({0, NAN}, 4, 64, 64, "");
            }),
            "scan.rotation: value 2 (frame 1) is not a finite angle");
  EXPECT_NO_THROW(check_scan_rotations({0, 180}, 4, 64, 32, ""));
  SynthOptions o = small_series({0, 90, 180, 270});
  o.frames = 3;
  EXPECT_NE(message_of([&] { SyntheticSeries s(o); }).find("4 rotations for 3 frame(s)"), std::string::npos);
}

TEST(ScanRotation, IsAnOrdinaryJobField) {
  nlohmann::json j = {{"driftscan_job", 1},
                      {"command", "register"},
                      {"input", "s.tif"},
                      {"output", "out"},
                      {"scan", {{"rotation", {0, 90, 180, 270}}}}};
  Job job = job_from_json(j, "job.json");
  EXPECT_EQ(job.scan.rotation, (std::vector<double>{0, 90, 180, 270}));
  EXPECT_EQ(to_json(job)["scan"]["rotation"], j["scan"]["rotation"]);
  EXPECT_EQ(to_json(Job{})["scan"]["rotation"], nlohmann::json::array());
  j["scan"]["rotation"] = "0,90";
  EXPECT_EQ(message_of([&] { job_from_json(j, "job.json"); }),
            "job.json: field 'scan.rotation' must be a list of angles in degrees");
  j["scan"]["rotation"] = {0, 45};  // any angle from frame 0's
  job = job_from_json(j, "job.json");
  EXPECT_NO_THROW(validate(job));
  job.command = "synth";
  job.synth.frames = 1;
  EXPECT_NE(message_of([&] { validate(job); }).find("2 rotations for 1 frame(s)"), std::string::npos);
}

namespace {

SynthOptions scanned_series(std::vector<double> rotations, std::size_t frames, int size) {
  SynthOptions o;
  o.frames = frames;
  o.width = o.height = size;
  o.period = 9.0;
  o.dose = 8.0;
  o.scan_dwell = 2e-6;
  o.scan_line_flyback = 0.25;
  o.drift_linear_x = 3.0;
  o.drift_linear_y = 1.5;
  o.drift_wobble = 1.0;
  o.drift_wobble_period = 5.0;
  o.drift_step = 0.2;
  o.jitter = 0.4;
  o.seed = 7;
  o.scan_rotation_deg = std::move(rotations);
  return o;
}

}  // namespace

TEST(ScanRotation, ScanMapOfATurnedFrameIsTheSeriesOwnAndInverts) {
  SyntheticSeries s(scanned_series({0, 90, 180, 270}, 4, 48));
  const ScanTiming& timing = s.scan_timing();
  ASSERT_TRUE(timing.turned());
  ScanModel truth;
  std::vector<DriftSample> samples;
  for (double t = 0; t <= timing.frame_start(4); t += 0.25 * timing.line_time())
    samples.push_back({t, s.drift_at(t).x, s.drift_at(t).y, 1});
  DriftPathSettings ps;
  ps.knot_spacing = 0.5 * timing.line_time();
  ps.smoothing = 1e-6;
  truth.path = DriftPath::fit(samples, 0.0, timing.frame_start(4), ps);
  truth.jitter.assign(4, std::vector<double>(48));
  for (std::size_t k = 0; k < 4; ++k)
    for (int l = 0; l < 48; ++l) truth.jitter[k][static_cast<std::size_t>(l)] = s.line_jitter(k, l);
  double worst = 0, inverse = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    const FrameScanMap map(timing, truth, k);
    for (int y = 0; y < 48; y += 5)
      for (int x = 0; x < 48; x += 7) {
        const Point a = map.probed(x, y), b = s.probed(k, x, y), c = truth.probed(timing, k, x, y);
        worst = std::max({worst, std::hypot(a.x - b.x, a.y - b.y), std::hypot(c.x - b.x, c.y - b.y)});
        const Point p = map.pixel_showing(a);
        inverse = std::max(inverse, std::hypot(p.x - x, p.y - y));
      }
  }
  EXPECT_LT(worst, 0.01);  // the path fitted to the truth's walk, linear within a line (a wrong turn: pixels)
  EXPECT_LT(inverse, 1e-3);
  EXPECT_EQ(timing.fast_axis(1).y, 1.0);
}

TEST(ScanRotation, DistortionCorrectedAcrossDirectionsFollowsTheLines) {
  // Orthogonal pairs: what one direction's lines cannot see, the other's pin.
  SyntheticSeries s(scanned_series({0, 90}, 8, 96));
  const ScanTiming& timing = s.scan_timing();
  FrameVector frames;
  std::vector<Point> rigid;
  for (std::size_t k = 0; k < 8; ++k) frames.push_back(s.frame(k)), rigid.push_back(s.drift(k));
  const ScanDistortionResult r = estimate_scan_distortion(frames, timing, rigid, ScanDistortionSettings{});
  double corrected = 0, by_frame = 0, jitter = 0, jitter0 = 0;
  const Point d0 = s.drift_at(timing.frame_mid_time(0));
  Point mean;
  std::vector<Point> e;
  for (std::size_t k = 0; k < 8; ++k)
    for (int l = 0; l < timing.lines(); ++l) {
      const double t = timing.line_mid_time(k, l);
      const Point est = r.model.path.at(t), truth = s.drift_at(t);
      e.push_back({est.x - truth.x, est.y - truth.y});
      mean.x += e.back().x / (8.0 * timing.lines()), mean.y += e.back().y / (8.0 * timing.lines());
      by_frame += std::pow(rigid[k].x + d0.x - truth.x, 2) + std::pow(rigid[k].y + d0.y - truth.y, 2);
      jitter += std::pow(r.model.jitter[k][static_cast<std::size_t>(l)] - s.line_jitter(k, l), 2);
      jitter0 += std::pow(s.line_jitter(k, l), 2);
    }
  for (const Point& p : e) corrected += std::pow(p.x - mean.x, 2) + std::pow(p.y - mean.y, 2);
  const double n = 8.0 * timing.lines();
  corrected = std::sqrt(corrected / n), by_frame = std::sqrt(by_frame / n);
  jitter = std::sqrt(jitter / n), jitter0 = std::sqrt(jitter0 / n);
  std::printf(
      "orthogonal pairs: per-line drift error %.4f px (one shift per frame %.4f), jitter error %.4f px "
      "(%.4f if 0)\n",
      corrected, by_frame, jitter, jitter0);
  EXPECT_LT(corrected, 0.3 * by_frame);
  EXPECT_LT(jitter, 0.8 * jitter0);
}
