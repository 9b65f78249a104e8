// The serial register pipeline end to end on small synthetic series: drift
// accurate against the truth, the four output files complete and readable,
// an injected (tree-shaped) scan giving the same answer, bad inputs refused
// or flagged without NaN in any output, cancellation leaving nothing that
// looks complete.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "csv_test_file.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/formats/tiff/tiff_series.hpp"
#include "driftscan/pipeline/register_pipeline.hpp"
#include "driftscan/pipeline/serial_register.hpp"
#include "driftscan/spectra/power_spectrum.hpp"
#include "driftscan/synthetic/synthetic_series.hpp"
#include "scratch_folder.hpp"

using namespace driftscan;
namespace fs = std::filesystem;

namespace {

using driftscan::test::read_csv;

struct TempDir : driftscan::test::TestScratchFolder {
  TempDir() : TestScratchFolder("driftscan_pipeline_") {}
};

SynthOptions small_series(std::size_t frames) {
  SynthOptions o;
  o.frames = frames;
  o.width = 128;
  o.height = 128;
  o.dose = 6;
  o.seed = 4;
  return o;
}

FrameVector materialise(const SyntheticSeries& s) {
  FrameVector v;
  for (std::size_t k = 0; k < s.frame_count(); ++k) v.push_back(s.frame(k));
  return v;
}

// Hillis-Steele doubling: a different bracketing of the same scan.
std::vector<Registration> doubling_scan(const std::vector<Registration>& x, const RegistrationCombine& op) {
  std::vector<Registration> cur = x;
  for (std::size_t d = 1; d < cur.size(); d *= 2) {
    std::vector<Registration> next = cur;
    for (std::size_t k = d; k < cur.size(); ++k) next[k] = op(cur[k - d], cur[k]);
    cur = std::move(next);
  }
  return cur;
}

}  // namespace

TEST(RegisterPipeline, SmallSeriesIsAccurateAndOutputsAreComplete) {
  SyntheticSeries s(small_series(30));
  FrameVector frames = materialise(s);
  TempDir dir;
  auto progress = make_silent_progress();
  CancelToken cancel;
  RegisterResult r =
      register_series(frames, RegistrationSettings{}, AveragingOptions{}, dir.path.string(), *progress, cancel, 2);
  ASSERT_EQ(r.registrations.size(), 30u);
  EXPECT_EQ(r.applications.size(), 29u);
  auto rows = read_csv(dir.path / "drift.csv");
  ASSERT_EQ(rows.size(), 31u);
  EXPECT_EQ(rows[0][0], "frame");
  EXPECT_EQ(rows[0][1], "dx");
  EXPECT_EQ(rows[0][2], "dy");
  double se = 0;
  for (std::size_t k = 0; k < 30; ++k) {
    double dx = std::stod(rows[k + 1][1]), dy = std::stod(rows[k + 1][2]);
    Point t = s.drift(k);
    se += (dx - t.x) * (dx - t.x) + (dy - t.y) * (dy - t.y);
  }
  EXPECT_LT(std::sqrt(se / 30), 0.06);
  EXPECT_GT(std::abs(s.drift(29).x) + std::abs(s.drift(29).y), 5.0);  // it really drifted

  auto avg = TiffSeries::open((dir.path / "average.tif").string());
  auto cov = TiffSeries::open((dir.path / "coverage.tif").string());
  EXPECT_EQ(avg->width(), 128);
  Frame a = avg->frame(0), c = cov->frame(0);
  for (float v : a.pixels) ASSERT_TRUE(std::isfinite(v));
  EXPECT_GT(*std::max_element(c.pixels.begin(), c.pixels.end()), 29.5f);
  // Averaging registered frames sharpens the lattice over one frame's noise.
  EXPECT_GT(lattice_sharpness(a), 2.0 * lattice_sharpness(frames.frames()[0]));

  std::ifstream rep(dir.path / "report.json");
  nlohmann::json j = nlohmann::json::parse(rep);
  EXPECT_EQ(j["operator_applications"].size(), 29u);
  EXPECT_GT(j["operator_applications"][0]["iterations"].get<int>(), 0);
  EXPECT_TRUE(j["timings_s"].contains("scan"));
  EXPECT_EQ(j["input"]["frames"], 30);
  EXPECT_EQ(j["settings"]["registration"]["model"], "translation");
  for (auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

// The same 12-frame series registered twice with defaults: on one thread,
// then on two (with `scan`, when given, instead of the sequential scan).
namespace {
std::pair<RegisterResult, RegisterResult> one_thread_then_two(const RegistrationScan& scan = {}) {
  SyntheticSeries s(small_series(12));
  FrameVector frames = materialise(s);
  TempDir d1, d2;
  d2.path += "_b";
  auto progress = make_silent_progress();
  CancelToken cancel;
  RegisterResult a = register_series(frames, {}, {}, d1.path.string(), *progress, cancel, 1);
  RegisterResult b = register_series(frames, {}, {}, d2.path.string(), *progress, cancel, 2, scan);
  return {std::move(a), std::move(b)};
}
}  // namespace

TEST(RegisterPipeline, InjectedScanWithOtherBracketingAgrees) {
  const auto [a, b] = one_thread_then_two(doubling_scan);
  EXPECT_GT(b.applications.size(), a.applications.size());
  for (std::size_t k = 0; k < 12; ++k) {
    EXPECT_NEAR(a.registrations[k].transform.tx, b.registrations[k].transform.tx, 0.01) << k;
    EXPECT_NEAR(a.registrations[k].transform.ty, b.registrations[k].transform.ty, 0.01) << k;
  }
}

// One thread computes each frame's uncertainty right after its scan step
// (its pyramid at hand), more threads in a phase after the scan: the same
// call on the same registrations, so the same numbers to the last bit.
TEST(RegisterPipeline, UncertaintyInTheScanEqualsThePhaseAfterIt) {
  const auto [a, b] = one_thread_then_two();
  ASSERT_EQ(a.uncertainty.size(), 12u);
  ASSERT_EQ(b.uncertainty.size(), 12u);
  for (std::size_t k = 0; k < 12; ++k) {
    EXPECT_EQ(a.registrations[k].transform.tx, b.registrations[k].transform.tx) << k;
    EXPECT_EQ(a.uncertainty[k].sigma_dx, b.uncertainty[k].sigma_dx) << k;
    EXPECT_EQ(a.uncertainty[k].sigma_dy, b.uncertainty[k].sigma_dy) << k;
    EXPECT_EQ(a.uncertainty[k].cov_dxdy, b.uncertainty[k].cov_dxdy) << k;
    EXPECT_EQ(a.uncertainty[k].noise_variance, b.uncertainty[k].noise_variance) << k;
    EXPECT_EQ(a.uncertainty[k].common_sigma_dx, b.uncertainty[k].common_sigma_dx) << k;
  }
  EXPECT_GT(a.uncertainty[5].sigma_dx, 0.0);
  EXPECT_TRUE(std::isfinite(a.uncertainty[5].sigma_dx));
  EXPECT_GT(a.cpu.uncertainty, 0.0);  // the scan's share counted as the uncertainty's
}

TEST(RegisterPipeline, RigidModelWritesAngles) {
  SynthOptions o = small_series(10);
  o.lattice = Lattice::square;
  o.rotation_step_deg = 0.3;
  SyntheticSeries s(o);
  FrameVector frames = materialise(s);
  TempDir dir;
  RegistrationSettings rs;
  rs.model = MotionModel::rigid;
  auto progress = make_silent_progress();
  CancelToken cancel;
  register_series(frames, rs, {}, dir.path.string(), *progress, cancel, 2);
  auto rows = read_csv(dir.path / "drift.csv");
  ASSERT_EQ(rows[0][3], "angle_deg");
  EXPECT_NEAR(std::stod(rows[10][3]), s.angle_deg(9), 0.05);
  EXPECT_NEAR(std::stod(rows[10][1]), s.drift(9).x, 0.1);
}

TEST(RegisterPipeline, BadFramesAreExcludedWithWarningsAndNoNaN) {
  SyntheticSeries s(small_series(10));
  FrameVector frames;
  for (std::size_t k = 0; k < 10; ++k) {
    Frame f = s.frame(k);
    if (k == 3) std::fill(f.pixels.begin(), f.pixels.end(), 0.0f);
    if (k == 6) f.at(5, 5) = std::numeric_limits<float>::quiet_NaN(), f.at(9, 2) = INFINITY;
    frames.push_back(std::move(f));
  }
  TempDir dir;
  auto progress = make_silent_progress();
  CancelToken cancel;
  RegisterResult r = register_series(frames, {}, {}, dir.path.string(), *progress, cancel, 2);
  EXPECT_FALSE(r.average.used[3]);
  EXPECT_FALSE(r.average.used[6]);
  EXPECT_TRUE(r.average.used[7]);
  // One warning line names both.
  bool warned = false;
  for (auto& w : r.warnings)
    warned |= w.find("unusable") != std::string::npos && w.find("(frames 3, 6)") != std::string::npos;
  EXPECT_TRUE(warned);
  // Frames after the bad ones are still right.
  EXPECT_NEAR(r.registrations[8].transform.tx, s.truth(8).tx, 0.1);
  EXPECT_NEAR(r.registrations[8].transform.ty, s.truth(8).ty, 0.1);
  for (float v : TiffSeries::open((dir.path / "average.tif").string())->frame(0).pixels) ASSERT_TRUE(std::isfinite(v));
  std::ifstream csv(dir.path / "drift.csv");
  std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("nan"), std::string::npos);
  // inf only as the sigma of a frame without information, flagged so.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("inf") != std::string::npos) {
      EXPECT_NE(line.find("singular"), std::string::npos) << line;
    }
  }
}

TEST(RegisterPipeline, FramesThatLeaveFrameZeroAreFlaggedNotAveraged) {
  SynthOptions o = small_series(24);
  o.width = o.height = 96;
  o.period = 16;  // consecutive shifts of 5 px stay below half a period
  o.drift_step = 0;
  o.drift_linear_x = 5.0;
  o.drift_linear_y = 0.0;
  SyntheticSeries s(o);
  FrameVector frames = materialise(s);
  TempDir dir;
  auto progress = make_silent_progress();
  CancelToken cancel;
  RegisterResult r = register_series(frames, {}, {}, dir.path.string(), *progress, cancel, 2);
  // 23 x 5 = 115 px: the last frames share (almost) nothing with frame 0.
  EXPECT_TRUE(r.registrations[23].flags & kRefineFailed);
  EXPECT_FALSE(r.average.used[23]);
  EXPECT_TRUE(r.average.used[5]);
  EXPECT_NEAR(r.registrations[5].transform.tx, s.truth(5).tx, 0.1);
  // The flagged frames still carry the chained estimate, not garbage.
  EXPECT_NEAR(r.registrations[23].transform.tx, s.truth(23).tx, 2.0);
  bool warned = false;
  for (auto& w : r.warnings) {
    warned |= w.find("could not be refined") != std::string::npos && w.find("23)") != std::string::npos;
  }
  EXPECT_TRUE(warned);
  for (float v : TiffSeries::open((dir.path / "average.tif").string())->frame(0).pixels) ASSERT_TRUE(std::isfinite(v));
}

TEST(RegisterPipeline, UnusableInputsAreRefusedClearly) {
  auto progress = make_silent_progress();
  CancelToken cancel;
  TempDir dir;
  SyntheticSeries s(small_series(3));
  auto message = [&](const FrameSource& f, const RegistrationSettings& rs) -> std::string {
    try {
      register_series(f, rs, {}, dir.path.string(), *progress, cancel, 1);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::bad_input) << e.what();
      return e.what();
    }
    return "no error";
  };
  FrameVector one;
  one.push_back(s.frame(0));
  EXPECT_NE(message(one, {}).find("at least 2 frames"), std::string::npos);
  FrameVector blank0 = materialise(s);
  FrameVector with_blank0;
  with_blank0.push_back(Frame(128, 128, 1.0f));
  with_blank0.push_back(s.frame(1));
  EXPECT_NE(message(with_blank0, {}).find("frame 0"), std::string::npos);
  RegistrationSettings roi;
  roi.roi = Roi{100, 100, 64, 64};
  EXPECT_NE(message(blank0, roi).find("ROI"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir.path / "report.json"));
}

TEST(RegisterPipeline, CancellationLeavesNoCompleteLookingOutput) {
  SyntheticSeries s(small_series(8));
  FrameVector frames = materialise(s);
  TempDir dir;
  auto progress = make_silent_progress();
  CancelToken cancel;
  cancel.request();
  try {
    register_series(frames, {}, {}, dir.path.string(), *progress, cancel, 1);
    ADD_FAILURE() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled);
  }
  EXPECT_FALSE(fs::exists(dir.path / "report.json"));
  EXPECT_FALSE(fs::exists(dir.path / "drift.csv"));
}

TEST(RegisterPipeline, TwoFramesOfOddSize) {
  SynthOptions o = small_series(2);
  o.width = 101;
  o.height = 77;
  SyntheticSeries s(o);
  FrameVector frames = materialise(s);
  TempDir dir;
  auto progress = make_silent_progress();
  CancelToken cancel;
  RegisterResult r = register_series(frames, {}, {}, dir.path.string(), *progress, cancel, 2);
  EXPECT_NEAR(r.registrations[1].transform.tx, s.truth(1).tx, 0.1);
  EXPECT_NEAR(r.registrations[1].transform.ty, s.truth(1).ty, 0.1);
  EXPECT_EQ(TiffSeries::open((dir.path / "average.tif").string())->width(), 101);
}

TEST(RegisterPipeline, AffineModelWritesTheMatrix) {
  SyntheticSeries s(small_series(6));
  FrameVector frames = materialise(s);
  TempDir dir;
  RegistrationSettings rs;
  rs.model = MotionModel::affine;
  auto progress = make_silent_progress();
  CancelToken cancel;
  register_series(frames, rs, {}, dir.path.string(), *progress, cancel, 2);
  auto rows = read_csv(dir.path / "drift.csv");
  ASSERT_GE(rows[0].size(), 10u);
  EXPECT_EQ(rows[0][3], "angle_deg");
  EXPECT_EQ(rows[0][4], "a");
  EXPECT_EQ(rows[0][9], "ty");
  EXPECT_NEAR(std::stod(rows[6][4]), 1.0, 0.01);  // a pure drift: A stays the identity
  EXPECT_NEAR(std::stod(rows[6][1]), s.drift(5).x, 0.1);
}
